//! nodes-config.yaml: hosts added to a running agent-installed cluster,
//! as `oc adm node-image create` reads them.

use super::*;
/// `oc adm node-image create`'s nodes-config.yaml for hosts added to a
/// cluster the agent installer made: each host as agent-config.yaml
/// lists it (a host with no MAC is left out, as there), with its intent
/// as its `networkConfig`. `None` when no host can be listed.
pub fn nodes_config(hosts: &[&Host]) -> Option<String> {
    let listed: Vec<(&Host, Vec<J>, Option<String>)> = hosts
        .iter()
        .filter_map(|h| {
            let ifaces = agent_interfaces(h);
            (!ifaces.is_empty()).then(|| (*h, ifaces, intent(h).map(|j| yaml(&j))))
        })
        .collect();
    if listed.is_empty() {
        return None;
    }
    let entries: Vec<J> = listed
        .iter()
        .map(|(h, ifaces, text)| agent_host(h, ifaces.clone(), text.is_some()))
        .collect();
    let doc = object([("hosts", J::Array(entries))]);
    let states: Vec<&str> = listed.iter().filter_map(|(_, _, t)| t.as_deref()).collect();
    let head = "# The hosts this change adds, for `oc adm node-image create --dir=DIR` (this\n# file in DIR): boot each from the ISO it writes; the node joins the cluster.\n";
    Some(format!(
        "{head}{}",
        embed_all(&yaml(&doc), &states, Embed::Mapping)
    ))
}
