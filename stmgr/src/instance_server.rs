//! The instance server: local instances connect to `127.0.0.1:local_data_port`, register,
//! and then exchange tuple sets. The socket side is [`crate::conn`]'s accept loop; this module
//! holds the rule for accepting a registration.

use crate::config::CoreConfig;
use heron_proto::stmgr::RegisterInstanceRequest;

/// Why a `RegisterInstanceRequest` is refused, if it is: the topology must be this one and the
/// instance one of this container's.
pub(crate) fn check_registration(
    req: &RegisterInstanceRequest,
    cfg: &CoreConfig,
) -> Result<(), String> {
    let id = &req.instance.instance_id;
    if req.topology_name != cfg.topology_name {
        return Err(format!(
            "instance {id} is of topology {:?}, this is {:?}",
            req.topology_name, cfg.topology_name
        ));
    }
    if req.topology_id != cfg.topology_id {
        return Err(format!(
            "instance {id} is of topology id {:?}, this is {:?}",
            req.topology_id, cfg.topology_id
        ));
    }
    if !cfg.instance_ids.iter().any(|i| i == id) {
        return Err(format!("{id:?} is not an instance of this container"));
    }
    if req.instance.stmgr_id != cfg.stmgr_id {
        return Err(format!(
            "instance {id} belongs to {:?}, this is {:?}",
            req.instance.stmgr_id, cfg.stmgr_id
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{instance, TOPOLOGY, TOPOLOGY_ID};

    fn cfg() -> CoreConfig {
        CoreConfig {
            topology_name: TOPOLOGY.into(),
            topology_id: TOPOLOGY_ID.into(),
            stmgr_id: "stmgr-1".into(),
            instance_ids: vec!["container_1_spout_1".into()],
            max_packet_size: 1 << 20,
            batch_bytes: 1 << 15,
        }
    }

    fn req(name: &str, id: &str, stmgr: &str, task: i32) -> RegisterInstanceRequest {
        RegisterInstanceRequest {
            instance: instance(stmgr, "spout", task),
            topology_name: name.into(),
            topology_id: id.into(),
        }
    }

    #[test]
    fn only_this_containers_instances_of_this_topology_register() {
        let c = cfg();
        assert_eq!(
            check_registration(&req(TOPOLOGY, TOPOLOGY_ID, "stmgr-1", 1), &c),
            Ok(())
        );
        let wrong = [
            req("other", TOPOLOGY_ID, "stmgr-1", 1),
            req(TOPOLOGY, "wc-2", "stmgr-1", 1),
            req(TOPOLOGY, TOPOLOGY_ID, "stmgr-1", 2),
        ];
        for r in &wrong {
            assert!(check_registration(r, &c).is_err(), "{r:?}");
        }
        let mut other_stmgr = req(TOPOLOGY, TOPOLOGY_ID, "stmgr-1", 1);
        other_stmgr.instance.stmgr_id = "stmgr-2".into();
        assert!(check_registration(&other_stmgr, &c)
            .unwrap_err()
            .contains("stmgr-2"));
    }
}
