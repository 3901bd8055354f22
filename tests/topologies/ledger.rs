//! An ATLEAST_ONCE topology whose spout keeps a ledger of message ids (used by
//! `tests/reliability.rs`); the topology itself is `examples/common/ledger.rs`.

mod args;
#[path = "../../examples/common/ledger.rs"]
mod ledger;

fn main() {
    heron::run_role_if_requested(ledger::topology);
    eprintln!(
        "ledger is a test topology: submit it with `heron submit local <this binary> --out-dir DIR`"
    );
    std::process::exit(2);
}
