use super::*;

/// The filter program as the kernel runs it: a tiny interpreter of
/// the three instructions it uses, over frames of each shape.
#[test]
fn the_filter_accepts_the_ethertype_tagged_or_not_and_nothing_else() {
    fn run(prog: &[libc::sock_filter], frame: &[u8]) -> u32 {
        let mut a = 0u32;
        let mut pc = 0usize;
        loop {
            let i = &prog[pc];
            match i.code {
                0x28 => {
                    let k = i.k as usize;
                    let Some(b) = frame.get(k..k + 2) else {
                        return 0;
                    };
                    a = u32::from(u16::from_be_bytes([b[0], b[1]]));
                }
                0x15 => {
                    pc += usize::from(if a == i.k { i.jt } else { i.jf });
                }
                0x06 => return i.k,
                c => panic!("opcode {c:#x}"),
            }
            pc += 1;
        }
    }
    let prog = filter_for(0x88cc);
    let untagged = crate::ether::build([0xff; 6], [2; 6], 0, 0x88cc, b"x");
    let tagged = crate::ether::build([0xff; 6], [2; 6], 120, 0x88cc, b"x");
    let other = crate::ether::build([0xff; 6], [2; 6], 0, 0x0800, b"x");
    let other_tagged = crate::ether::build([0xff; 6], [2; 6], 120, 0x0800, b"x");
    assert_ne!(run(&prog, &untagged), 0);
    assert_ne!(run(&prog, &tagged), 0);
    assert_eq!(run(&prog, &other), 0);
    assert_eq!(run(&prog, &other_tagged), 0);
    assert_eq!(run(&prog, &untagged[..10]), 0);
}

#[test]
fn bad_interface_names_are_errors_not_panics() {
    assert!(ifreq("").is_err());
    assert!(ifreq("a-name-longer-than-ifnamsiz").is_err());
    assert!(ifindex("no-such-nic0").is_err());
    assert!(flags("no-such-nic0").is_err());
}
