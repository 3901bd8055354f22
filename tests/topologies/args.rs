//! The `--name value` arguments of the test topologies.

/// Calls `set(name, value)` for each `--name value` pair of `args`; stops at the first error
/// (a name without a value, or what `set` refuses).
pub fn each_pair(
    args: &[String],
    mut set: impl FnMut(&str, &str) -> Result<(), String>,
) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        set(k, v)?;
    }
    Ok(())
}

/// `value` as a number, or an error naming `name`.
pub fn number(name: &str, value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| format!("{name}: bad number {value:?}"))
}

/// The error for an argument nobody knows.
pub fn unknown(name: &str) -> Result<(), String> {
    Err(format!("unknown argument {name:?}"))
}
