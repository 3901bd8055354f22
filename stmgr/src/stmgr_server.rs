//! The stream-manager server: every other stream manager opens one connection to
//! `host:data_port`, says hello, and then sends only one-way messages (tuple streams,
//! back-pressure notices). The socket side is [`crate::conn`]'s accept loop; this module holds
//! the rule for accepting a hello.

use heron_proto::stmgr::StrMgrHelloRequest;
use heron_proto::system::PhysicalPlan;

/// Why a `StrMgrHelloRequest` is refused, if it is: same topology name and id, not this
/// stream manager itself, and a member of the physical plan when one is known. (The core
/// holds hellos that come before the first plan and answers them when it comes.)
pub(crate) fn check_hello(
    req: &StrMgrHelloRequest,
    topology_name: &str,
    topology_id: &str,
    my_id: &str,
    pplan: Option<&PhysicalPlan>,
) -> Result<(), String> {
    let who = &req.stmgr;
    if req.topology_name != topology_name || req.topology_id != topology_id {
        return Err(format!(
            "{who} is of topology {:?} ({:?}), this is {topology_name:?} ({topology_id:?})",
            req.topology_name, req.topology_id
        ));
    }
    if who == my_id {
        return Err(format!("{who} is this stream manager's own id"));
    }
    if let Some(p) = pplan {
        if !p.stmgrs.iter().any(|s| &s.id == who) {
            return Err(format!("{who:?} is not in the physical plan"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Plan, TOPOLOGY, TOPOLOGY_ID};

    fn hello(name: &str, id: &str, stmgr: &str) -> StrMgrHelloRequest {
        StrMgrHelloRequest {
            topology_name: name.into(),
            topology_id: id.into(),
            stmgr: stmgr.into(),
        }
    }

    #[test]
    fn hello_needs_the_topology_and_a_planned_peer() {
        let plan = Plan::new().stmgr("stmgr-1", 1).stmgr("stmgr-2", 2).build();
        let check = |h: &StrMgrHelloRequest, p| check_hello(h, TOPOLOGY, TOPOLOGY_ID, "stmgr-1", p);
        assert_eq!(
            check(&hello(TOPOLOGY, TOPOLOGY_ID, "stmgr-2"), Some(&plan)),
            Ok(())
        );
        assert!(check(&hello("other", TOPOLOGY_ID, "stmgr-2"), Some(&plan)).is_err());
        assert!(check(&hello(TOPOLOGY, "wc-9", "stmgr-2"), Some(&plan)).is_err());
        assert!(check(&hello(TOPOLOGY, TOPOLOGY_ID, "stmgr-1"), Some(&plan)).is_err());
        let stranger = hello(TOPOLOGY, TOPOLOGY_ID, "stmgr-3");
        assert!(check(&stranger, Some(&plan))
            .unwrap_err()
            .contains("physical plan"));
        // without a plan, membership cannot be checked yet
        assert_eq!(check(&stranger, None), Ok(()));
    }
}
