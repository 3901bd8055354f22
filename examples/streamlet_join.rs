//! A windowed join in Heron's Streamlet API: orders joined with their users.
//!
//! ```sh
//! cargo run --release --example streamlet_join -- --orders orders.tsv --users users.tsv --output joined.tsv
//! ```
//!
//! `--orders` holds `order_id<TAB>user_id<TAB>amount` lines, `--users` `user_id<TAB>name`
//! lines. Both are read by their own source stage and joined on the user id (outer left:
//! every order, with `-` for an unknown user) in one tumbling count window holding every
//! record, so the result does not depend on timing; a sink writes
//! `order_id<TAB>user_id<TAB>amount<TAB>name` lines, sorted. Exits 0 once every order is in the
//! output. 2 containers, ATLEAST_ONCE.

#[path = "common/files.rs"]
mod files;

use std::path::PathBuf;
use std::time::Duration;

use heron::sources::SourceSpout;
use heron::streamlet::{Builder, JoinType, KeyValue, KeyedWindow, Sink};
use heron::window::{Length, WindowConfig};
use heron::{Config, HeronTopology, TopologyError};

type Order = (i64, i64, i64);
type User = (i64, String);
type Joined = (i64, i64, i64, String);

fn parse_order(line: &str) -> Option<Order> {
    let mut f = line.split('\t').map(|x| x.trim().parse::<i64>().ok());
    Some((f.next()??, f.next()??, f.next()??))
}

fn parse_user(line: &str) -> Option<User> {
    let (id, name) = line.split_once('\t')?;
    Some((id.trim().parse().ok()?, name.trim().to_owned()))
}

fn lines(path: &str) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
}

/// Keeps the joined rows, sorted, in the output file.
struct Rows {
    output: PathBuf,
    rows: Vec<Joined>,
}

impl Sink<KeyValue<KeyedWindow<i64>, Joined>> for Rows {
    fn put(&mut self, kv: KeyValue<KeyedWindow<i64>, Joined>) {
        self.rows.push(kv.value);
        self.rows.sort();
        let text: String = self
            .rows
            .iter()
            .map(|(o, u, a, n)| format!("{o}\t{u}\t{a}\t{n}\n"))
            .collect();
        if let Err(e) = files::write_atomically(&self.output, &text) {
            eprintln!("writing {}: {e}", self.output.display());
        }
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let bad = TopologyError::Invalid;
    let need = |flag: &str| files::arg(args, flag).ok_or_else(|| bad(format!("{flag} FILE")));
    let (orders_file, users_file) = (need("--orders")?, need("--users")?);
    let output = PathBuf::from(need("--output")?);
    let containers = files::count_arg(args, "--containers", 2).map_err(bad)?;
    // one window holds every record: its count is known from the files
    let records = (lines(&orders_file) + lines(&users_file)).max(1) as u64;

    let b = Builder::new();
    let orders = b
        .new_source_spout(move || SourceSpout::files([orders_file.clone()]))
        .set_name("orders-file")
        .flat_map(|l: String| parse_order(&l))
        .set_name("orders");
    let users = b
        .new_source_spout(move || SourceSpout::files([users_file.clone()]))
        .set_name("users-file")
        .flat_map(|l: String| parse_user(&l))
        .set_name("users");
    orders
        .join(
            &users,
            |o: &Order| o.1,
            |u: &User| u.0,
            WindowConfig::tumbling(Length::count(records)),
            JoinType::OuterLeft,
            |o: Option<&Order>, u: Option<&User>| {
                let o = o.expect("an outer left join always has the left side");
                (o.0, o.1, o.2, u.map_or("-".to_owned(), |u| u.1.clone()))
            },
        )
        .set_name("join")
        .to_sink(move || Rows {
            output: output.clone(),
            rows: Vec::new(),
        })
        .set_name("rows");

    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, containers.to_string());
    c.set(Config::TOPOLOGY_RELIABILITY_MODE, "ATLEAST_ONCE");
    c.set(
        Config::TOPOLOGY_MAX_SPOUT_PENDING,
        (2 * records + 100).to_string(),
    );
    b.build("StreamletJoin", c)
}

fn main() {
    heron::run_role_if_requested(topology);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(orders), Some(_), Some(output)) = (
        files::arg(&args, "--orders"),
        files::arg(&args, "--users"),
        files::arg(&args, "--output"),
    ) else {
        eprintln!(
            "usage: streamlet_join --orders FILE --users FILE --output FILE [--containers 2]"
        );
        std::process::exit(2);
    };
    let want = lines(&orders);
    let _ = std::fs::remove_file(&output);
    let role_args = files::absolute_paths(&args, &["--orders", "--users", "--output"]);
    let code = files::run_until(&role_args, Duration::from_secs(600), || {
        std::fs::read_to_string(&output).is_ok_and(|t| t.lines().count() >= want)
    });
    if code == 0 {
        println!("{want} orders joined in {output}");
    }
    std::process::exit(code);
}
