//! The address a container's daemons bind and advertise to each other.
//!
//! A cluster names it with `heron-rs.host` (the executor's `--host`): an IP address, or
//! [`AUTO`], which each executor resolves where it runs: the `HOST` environment variable when
//! it holds an IP address (Heron's convention; Kubernetes sets it from the pod's IP), else the
//! address this machine uses to reach the state manager (the interface a cluster node shares
//! with the others), else `127.0.0.1`.

use heron_statemgr::StateManagerSpec;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs, UdpSocket};

/// The `--host` value that makes each executor find its own address.
pub const AUTO: &str = "auto";

/// The address `configured` stands for on this machine; `env_host` is `$HOST`.
///
/// ```
/// use heron_scheduler::host::resolve_host;
/// use heron_statemgr::StateManagerSpec;
/// let local = StateManagerSpec::Local("/tmp/state".into());
/// assert_eq!(resolve_host("10.0.0.7", &local, None), "10.0.0.7");
/// assert_eq!(resolve_host("auto", &local, Some("198.51.100.4")), "198.51.100.4");
/// // no HOST and a state manager on this machine: loopback
/// assert_eq!(resolve_host("auto", &local, Some("vm")), "127.0.0.1");
/// ```
pub fn resolve_host(configured: &str, state: &StateManagerSpec, env_host: Option<&str>) -> String {
    if configured != AUTO {
        return configured.to_string();
    }
    if let Some(ip) = env_host.and_then(|h| h.trim().parse::<IpAddr>().ok()) {
        if !ip.is_unspecified() {
            return ip.to_string();
        }
    }
    match state {
        StateManagerSpec::ZooKeeper(zk) => zk
            .connect
            .split(',')
            .filter_map(|server| route_to(server.trim()))
            .next()
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
            .to_string(),
        StateManagerSpec::Local(_) => Ipv4Addr::LOCALHOST.to_string(),
    }
}

/// The local address of the route to `server` (`host:port`): a UDP socket's `connect` picks
/// the route and sends nothing.
fn route_to(server: &str) -> Option<IpAddr> {
    let target = server.to_socket_addrs().ok()?.next()?;
    let bind = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(target).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_statemgr::ZkConfig;

    #[test]
    fn auto_takes_the_route_to_zookeeper() {
        let zk = StateManagerSpec::ZooKeeper(ZkConfig::new("127.0.0.1:2181", "/heron"));
        assert_eq!(resolve_host(AUTO, &zk, None), "127.0.0.1");
        // a server that does not resolve is skipped
        let zk = StateManagerSpec::ZooKeeper(ZkConfig::new(
            "no-such-host.invalid:2181,127.0.0.1:2181",
            "/heron",
        ));
        assert_eq!(resolve_host(AUTO, &zk, Some("0.0.0.0")), "127.0.0.1");
    }
}
