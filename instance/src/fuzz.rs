//! Fuzzing entry point (`fuzz/`, target `instance`): what the stream manager sends an
//! instance, through the inbox's decoding and the executor's tuple decoding. Not a stable
//! API.

use heron_api::{Fields, TopologyContext};

use crate::inbound::{decode, InMsg, TupleDecoder};

/// `data`: framed packets, as the instance reads them from its stream manager.
pub fn from_stmgr(data: &[u8]) {
    let ctx = TopologyContext::builder("wc", "count", 3)
        .stream("split", "default", Fields::new(["word"]))
        .build();
    let mut decoder = TupleDecoder::new();
    for p in heron_proto::fuzz::packets(data) {
        let mut batch = Vec::new();
        if decode(&p, &mut batch).is_err() {
            return; // the executor's inbox closes the connection
        }
        for msg in batch {
            if let InMsg::Data(set) = msg {
                let _ = decoder.for_each(&ctx, &set, |t| {
                    let _ = (t.values().len(), t.get_str(0), t.roots().len());
                    Ok::<_, ()>(())
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn kept_inputs_run_without_panicking() {
        assert!(heron_proto::fuzz::replay("instance", super::from_stmgr) > 0);
    }
}
