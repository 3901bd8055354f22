//! The local data sockets: Unix domain sockets in Linux's abstract namespace on which a stream
//! manager takes its own container's instances, beside its TCP instance server, and the other
//! heron-rs stream managers of its host, beside its TCP stream-manager server
//! ([`mesh_name`]).
//!
//! The bytes are Heron's, as on TCP; only the transport differs. A Unix stream socket moves a
//! buffer from one process to another without the TCP stack (segments, acknowledgements, a
//! softirq per delivery on loopback), which costs a third of the CPU per byte here
//! (`docs/cost-log.md`, "Instances on a local socket"). Instances of other runtimes (Heron's
//! Java or Python instance) keep using the TCP port.
//!
//! The name is derived from the TCP port of the instance server, which is unique on the host
//! while the stream manager runs, so an instance that knows the port knows the name. An
//! abstract name needs no file (nothing to clean up after a crash) and is private to the
//! network namespace, which a container's processes share.
//!
//! ```
//! let name = heron_flow::local_socket::name(6001);
//! assert_eq!(name, "heron-rs/stmgr/6001");
//! # #[cfg(target_os = "linux")]
//! # {
//! let addr = heron_flow::local_socket::address(6001).unwrap();
//! use std::os::linux::net::SocketAddrExt;
//! assert_eq!(addr.as_abstract_name(), Some(name.as_bytes()));
//! # }
//! ```

/// The abstract name of the local data socket of the stream manager whose TCP instance server
/// is on `port`.
pub fn name(port: u16) -> String {
    format!("heron-rs/stmgr/{port}")
}

/// [`name`] as a socket address (Linux only: elsewhere there is no abstract namespace, and
/// the error says so).
pub fn address(port: u16) -> std::io::Result<std::os::unix::net::SocketAddr> {
    abstract_address(name(port))
}

/// The abstract name of the local mesh socket of the stream manager whose stream-manager
/// server (its `data_port`) is on `host:port`: where another heron-rs stream manager of the
/// same host connects instead of that TCP address. Unique on the host while the stream
/// manager runs, as the TCP address is (two stream managers may use one port on two
/// addresses of a host), and known to whoever knows the address (it is in the physical plan).
///
/// ```
/// let name = heron_flow::local_socket::mesh_name("127.0.0.1", 6002);
/// assert_eq!(name, "heron-rs/stmgr-mesh/127.0.0.1:6002");
/// ```
pub fn mesh_name(host: &str, port: u16) -> String {
    format!("heron-rs/stmgr-mesh/{host}:{port}")
}

/// [`mesh_name`] as a socket address (Linux only, as [`address`]; a name too long for a
/// socket address is an error).
pub fn mesh_address(host: &str, port: u16) -> std::io::Result<std::os::unix::net::SocketAddr> {
    abstract_address(mesh_name(host, port))
}

fn abstract_address(name: String) -> std::io::Result<std::os::unix::net::SocketAddr> {
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = name;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "local data sockets need Linux's abstract socket namespace",
        ))
    }
}
