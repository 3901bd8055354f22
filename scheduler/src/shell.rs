//! Commands as POSIX shell text (the Slurm job script, a Kubernetes container's command).

/// `arg` as one POSIX shell word.
///
/// ```
/// assert_eq!(heron_scheduler::shell::quote("a b"), "'a b'");
/// assert_eq!(heron_scheduler::shell::quote("it's"), r"'it'\''s'");
/// assert_eq!(heron_scheduler::shell::quote("--shard"), "--shard");
/// ```
pub fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}
