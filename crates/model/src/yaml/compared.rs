//! The fast readers' tests: a reader held to yaml-rust2 on a text.

use super::{parse_at, parse_by_yaml_rust2, read_fast, Base, FastRead as Read, Node, Parsed};

/// What `read` gives for `text`, when it takes it.
pub(super) fn fast(read: Read, text: &str) -> Option<Parsed> {
    read_fast(read, text, 0, Base::default())
}

/// What yaml-rust2 gives, the error as text.
pub(super) fn slow(text: &str) -> Result<Vec<Node>, String> {
    parse_by_yaml_rust2(text, 0, Base::default()).map_err(|e| format!("{e:?}"))
}

/// `read` takes `text`, and gives yaml-rust2's tree, every span included.
#[track_caller]
pub(super) fn taken_alike(read: Read, text: &str) {
    let fast = fast(read, text).unwrap_or_else(|| panic!("not taken:\n{text}"));
    assert_eq!(fast.map_err(|e| format!("{e:?}")), slow(text), "\n{text}");
}

/// Every text one edit away from `seeds` (a byte dropped, or one of
/// `inserts` put in before a byte): wherever `read` takes one, it gives
/// yaml-rust2's tree or error. How many it took, of how many.
#[track_caller]
pub(super) fn agree_one_edit_away(read: Read, seeds: &[&str], inserts: &[&str]) -> (usize, usize) {
    let (mut taken, mut checked) = (0, 0);
    for seed in seeds {
        for i in 0..seed.len() {
            let dropped = format!("{}{}", &seed[..i], &seed[i + 1..]);
            let put_in = inserts
                .iter()
                .map(|ins| format!("{}{ins}{}", &seed[..i], &seed[i..]));
            for v in std::iter::once(dropped).chain(put_in) {
                checked += 1;
                if let Some(fast) = fast(read, &v) {
                    taken += 1;
                    assert_eq!(fast.map_err(|e| format!("{e:?}")), slow(&v), "\n{v}");
                }
            }
        }
    }
    (taken, checked)
}

/// `read` declines `text`, and [`parse_at`] gives yaml-rust2's answer all
/// the same.
#[track_caller]
pub(super) fn declined(read: Read, text: &str) {
    assert!(fast(read, text).is_none(), "taken: {text:?}");
    assert_eq!(
        parse_at(text, 0, Base::default()).map_err(|e| format!("{e:?}")),
        slow(text),
        "{text:?}"
    );
}
