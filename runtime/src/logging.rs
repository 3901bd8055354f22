//! Logging for role processes: `tracing` to stderr (the executor points it at
//! `log-files/<name>.log`), filtered by `RUST_LOG` (default `info`), with the process name
//! on every line:
//!
//! ```text
//! 2025-01-01T12:00:00.000000Z  INFO stmgr-1 heron_stmgr::server: registered with the tmaster
//! ```

use std::fmt;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber (once; later calls do nothing).
pub fn init(process_name: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(Named {
            name: process_name.to_string(),
        })
        .try_init();
}

/// `<time> <LEVEL> <process> <target>: <spans>: <fields>`.
struct Named {
    name: String,
}

impl<S, N> FormatEvent<S, N> for Named
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        SystemTime.format_time(&mut writer)?;
        let meta = event.metadata();
        write!(
            writer,
            " {:>5} {} {}: ",
            meta.level(),
            self.name,
            meta.target()
        )?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                write!(writer, "{}: ", span.name())?;
            }
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
