//! The `handshake` target: the first bytes every authenticated listener and client reads
//! (`heron_auth`), through the real async handshake over an in-memory stream.

use heron_auth::Secret;

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
}

/// The input as a client's bytes to [`heron_auth::accept`] and as a server's bytes to
/// [`heron_auth::connect`]. Neither may panic, and neither may succeed: the server's nonce
/// and the client's are fresh and random, so no input proves the secret without it.
pub fn handshake(data: &[u8]) {
    let secret = Secret::from_bytes([7; heron_auth::SECRET_LEN]);
    RUNTIME.with(|rt| {
        rt.block_on(async {
            let mut as_client = tokio::io::join(data, tokio::io::sink());
            let accepted = heron_auth::accept(&mut as_client, &secret).await;
            assert!(
                accepted.is_err(),
                "a handshake without the secret was accepted"
            );
            let mut as_server = tokio::io::join(data, tokio::io::sink());
            let connected = heron_auth::connect(&mut as_server, &secret).await;
            assert!(
                connected.is_err(),
                "a server without the secret was believed"
            );
        })
    })
}

/// Seeds: a well-formed response with a wrong MAC, a challenge and proof, and a plain Heron
/// packet's first bytes.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    use heron_auth::handshake::{ClientSide, ServerSide};
    let secret = Secret::from_bytes([7; heron_auth::SECRET_LEN]);
    let server = ServerSide::new(&secret, [1; 32]);
    let mut client = ClientSide::new(&secret, [2; 32]);
    let challenge = server.challenge();
    let response = client.respond(&challenge).expect("a challenge");
    let proof = server.check(&response).expect("the same secret");
    vec![
        response.to_vec(),
        [challenge.as_slice(), proof.as_slice()].concat(),
        b"\x00\x00\x00\x3c\x00\x00\x00\x24heron.proto.stmgr.StrMgrHelloRequest".to_vec(),
    ]
}
