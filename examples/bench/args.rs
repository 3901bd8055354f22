//! The bench's command line. Every process of the topology parses the same arguments (they
//! are the topology's user arguments), so this is also what rebuilds the topology in each role.

use crate::common::parse_duration;
use std::time::Duration;

/// Which topology to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// constant spout → null bolt
    ConstNull,
    /// constant spout → identity bolt → null bolt
    ConstIdNull,
    /// sentence spout → split (shuffle) → count (fields on word)
    WordCount,
    /// sentence spout → a pystorm bolt that passes each tuple on → split → count: the cost
    /// of the multi-lang boundary with Python doing nothing
    MultilangPass,
    /// sentence spout → pystorm split → pystorm count (fields on word) → sink: the word
    /// count done in Python
    MultilangWordCount,
    /// the word count in the Streamlet API: sentence spout → flat_map split → count by word
    /// in tumbling 1000-word windows → sink (words/s counted at the sink)
    StreamletWordCount,
}

impl Topology {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Topology::ConstNull => "const-null",
            Topology::ConstIdNull => "const-id-null",
            Topology::WordCount => "word-count",
            Topology::MultilangPass => "multilang-pass",
            Topology::MultilangWordCount => "multilang-word-count",
            Topology::StreamletWordCount => "streamlet-word-count",
        }
    }

    fn parse(s: &str) -> Result<Topology, String> {
        match s {
            "const-null" => Ok(Topology::ConstNull),
            "const-id-null" => Ok(Topology::ConstIdNull),
            "word-count" => Ok(Topology::WordCount),
            "multilang-pass" => Ok(Topology::MultilangPass),
            "multilang-word-count" => Ok(Topology::MultilangWordCount),
            "streamlet-word-count" => Ok(Topology::StreamletWordCount),
            _ => Err(format!(
                "--topology must be const-null, const-id-null, word-count, multilang-pass, \
                 multilang-word-count or streamlet-word-count, not {s:?}"
            )),
        }
    }
}

/// Delivery guarantee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reliability {
    /// ATMOST_ONCE: no acking; latency is end to end, measured at the final bolt.
    AtMost,
    /// ATLEAST_ONCE: XOR acking; latency is the complete latency, measured at the spout.
    AtLeast,
    /// EFFECTIVELY_ONCE: checkpoints every `--checkpoint-interval`, no acking; latency is
    /// end to end, measured at the final bolt. The spout's position and the word counts
    /// are the checkpointed state.
    Effectively,
}

impl Reliability {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Reliability::AtMost => "atmost",
            Reliability::AtLeast => "atleast",
            Reliability::Effectively => "effectively",
        }
    }
}

/// A system to run the same word count on after ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// timely dataflow, two worker processes over loopback.
    Timely,
    /// The relay floor: our process layout with bare frames and no per-tuple work
    /// (`relay_peer.rs`).
    Relay,
}

/// Everything the command line says.
#[derive(Clone, Debug)]
pub struct Options {
    pub topology: Topology,
    pub reliability: Reliability,
    /// Whole run, warm-up included.
    pub duration: Duration,
    /// Not measured: the first part of the run.
    pub warmup: Duration,
    pub containers: u32,
    pub parallelism: u32,
    /// Total spout rate cap, tuples/s over all spout tasks.
    pub rate: Option<u64>,
    /// `topology.max.spout.pending`; Heron's default when absent.
    pub max_spout_pending: Option<u64>,
    /// Word-count vocabulary size (default: the 32 words of `examples/word_count.rs`).
    pub vocabulary: usize,
    pub json: bool,
    pub peer: Option<Peer>,
    /// `topology.stateful.checkpoint.interval.seconds` with `--reliability effectively`.
    pub checkpoint_interval: Duration,
    /// The Python that runs the multi-lang topologies' pystorm bolts (needs pystorm).
    pub python: String,
    /// `heron-rs.tls.enabled`: TLS on the links between daemons.
    pub tls: bool,
    /// streamlet-word-count: split with `flat_map` (a `String` per word) instead of a
    /// `transform` that overwrites one pair.
    pub streamlet_flat_map: bool,
    /// streamlet-word-count: words per count window of each count task.
    pub streamlet_window: u64,
    /// Extra topology config (`--conf KEY=VALUE`), set last.
    pub conf: Vec<(String, String)>,
}

/// The usage text (`--help`).
pub const USAGE: &str = "\
usage: bench --topology const-null|const-id-null|word-count|multilang-pass|multilang-word-count|streamlet-word-count [options]
  --reliability atmost|atleast|effectively
                                 delivery guarantee (default atmost)
  --checkpoint-interval 10s      seconds between checkpoints with effectively (default 10s)
  --duration 20s                 whole run, warm-up included (default 20s)
  --warmup 3s                    not measured (default 3s, at most half the duration)
  --containers N                 stream managers (default 2)
  --parallelism N                tasks per component (default 2)
  --rate N                       cap on the total spout rate, tuples/s (default: none)
  --max-spout-pending N          topology.max.spout.pending (default: Heron's, 100)
  --vocabulary N                 word-count vocabulary size (default 32, word_count's words)
  --python PATH                  the Python of the multilang topologies' pystorm bolts
                                 (default python3; it must import pystorm)
  --tls                          TLS on the links between daemons (heron-rs.tls.enabled)
  --streamlet-flat-map           streamlet-word-count splits with flat_map (a String per
                                 word) instead of a transform that reuses one pair
  --streamlet-window N           streamlet-word-count: words per count window of each count
                                 task (default 1000; each window sends one result per word)
  --conf KEY=VALUE               any topology config, e.g. the back-pressure watermarks
                                 (heron.streammgr.network.backpressure.highwatermark.mb); repeatable
  --json                         print one JSON object instead of a summary
  --peer timely|relay            then run timely's word count and compare (word-count only;
                                 with --rate, timely gets the same cap and its latency is
                                 shown); relay: the floor of our process layout, bare frames
                                 and no per-tuple work but splitting and counting (no --rate;
                                 with atleast, also acking in our spouts' window; pinned
                                 when ours are)";

impl Options {
    /// Parses the arguments (without the program name). `Err` is the message to print; the
    /// caller exits with status 2.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut topology = None;
        let mut o = Options {
            topology: Topology::ConstNull,
            reliability: Reliability::AtMost,
            duration: Duration::from_secs(20),
            warmup: Duration::from_secs(3),
            containers: 2,
            parallelism: 2,
            rate: None,
            max_spout_pending: None,
            vocabulary: crate::common::sentences::WORDS.len(),
            json: false,
            peer: None,
            checkpoint_interval: Duration::from_secs(10),
            python: "python3".to_string(),
            tls: false,
            streamlet_flat_map: false,
            streamlet_window: 1000,
            conf: Vec::new(),
        };
        let mut warmup_given = false;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            // `--name=value` works as well as `--name value`
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match name {
                "--topology" => topology = Some(Topology::parse(&value()?)?),
                "--reliability" => {
                    o.reliability = match value()?.as_str() {
                        "atmost" => Reliability::AtMost,
                        "atleast" => Reliability::AtLeast,
                        "effectively" => Reliability::Effectively,
                        r => {
                            return Err(format!(
                                "--reliability must be atmost, atleast or effectively, not {r:?}"
                            ))
                        }
                    }
                }
                "--duration" => {
                    o.duration =
                        parse_duration(&value()?).map_err(|e| format!("--duration: {e}"))?
                }
                "--warmup" => {
                    o.warmup = parse_duration(&value()?).map_err(|e| format!("--warmup: {e}"))?;
                    warmup_given = true;
                }
                "--containers" => o.containers = positive(name, &value()?)? as u32,
                "--parallelism" => o.parallelism = positive(name, &value()?)? as u32,
                "--rate" => o.rate = Some(positive(name, &value()?)?),
                "--max-spout-pending" => o.max_spout_pending = Some(positive(name, &value()?)?),
                "--vocabulary" => o.vocabulary = positive(name, &value()?)? as usize,
                "--checkpoint-interval" => {
                    let d = parse_duration(&value()?)
                        .map_err(|e| format!("--checkpoint-interval: {e}"))?;
                    if d.subsec_nanos() != 0 {
                        return Err("--checkpoint-interval must be whole seconds".to_string());
                    }
                    o.checkpoint_interval = d;
                }
                "--python" => o.python = value()?,
                "--conf" => {
                    let kv = value()?;
                    let (k, v) = kv
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| format!("--conf needs KEY=VALUE, not {kv:?}"))?;
                    o.conf.push((k.to_string(), v.to_string()));
                }
                "--json" if inline.is_none() => o.json = true,
                "--tls" if inline.is_none() => o.tls = true,
                "--streamlet-flat-map" if inline.is_none() => o.streamlet_flat_map = true,
                "--streamlet-window" => o.streamlet_window = positive(name, &value()?)?,
                "--peer" | "--compare" => {
                    o.peer = match value()?.as_str() {
                        "timely" => Some(Peer::Timely),
                        "relay" => Some(Peer::Relay),
                        p => return Err(format!("{name} must be timely or relay, not {p:?}")),
                    }
                }
                "-h" | "--help" => return Err(USAGE.to_string()),
                _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
            }
        }
        o.topology = topology.ok_or_else(|| format!("--topology is required\n{USAGE}"))?;
        if o.containers > 1024 || o.parallelism > 1024 {
            return Err("--containers and --parallelism must be at most 1024".to_string());
        }
        let half = o.duration / 2;
        if o.warmup > half {
            if warmup_given {
                return Err(format!(
                    "--warmup ({:?}) must be at most half of --duration ({:?})",
                    o.warmup, o.duration
                ));
            }
            o.warmup = half;
        }
        if o.peer.is_some() && o.topology != Topology::WordCount {
            return Err("--peer compares word counts: it needs --topology word-count".to_string());
        }
        if o.peer == Some(Peer::Relay) && o.rate.is_some() {
            return Err("--peer relay runs flat out only: drop --rate".to_string());
        }
        if o.peer == Some(Peer::Relay) && o.reliability == Reliability::Effectively {
            return Err(
                "--peer relay has no effectively-once mode: use atmost or atleast".to_string(),
            );
        }
        Ok(o)
    }

    /// How `--peer relay` runs to match these options: acked with our spouts' window under
    /// `--reliability atleast`, its containers pinned when ours are.
    pub fn relay_setup(&self) -> crate::relay_peer::Setup {
        let config = self.config();
        crate::relay_peer::Setup {
            vocabulary: self.vocabulary,
            window: match self.reliability {
                Reliability::AtLeast => config.max_spout_pending() as usize,
                _ => 0,
            },
            pinned: heron_scheduler::pinning::CpuPinning::from_config(|k| config.get(k))
                == Ok(heron_scheduler::pinning::CpuPinning::Core),
        }
    }

    /// The topology config these options ask for.
    pub fn config(&self) -> heron::Config {
        let mut c = heron::Config::new();
        c.set(heron::Config::TOPOLOGY_STMGRS, self.containers.to_string());
        match self.reliability {
            Reliability::AtLeast => {
                c.set(heron::Config::TOPOLOGY_RELIABILITY_MODE, "ATLEAST_ONCE");
            }
            Reliability::Effectively => {
                c.set(heron::Config::TOPOLOGY_RELIABILITY_MODE, "EFFECTIVELY_ONCE");
                c.set(
                    "topology.stateful.checkpoint.interval.seconds",
                    self.checkpoint_interval.as_secs().to_string(),
                );
            }
            Reliability::AtMost => {}
        }
        if let Some(n) = self.max_spout_pending {
            c.set(heron::Config::TOPOLOGY_MAX_SPOUT_PENDING, n.to_string());
        }
        if self.tls {
            c.set("heron-rs.tls.enabled", "true");
        }
        for (k, v) in &self.conf {
            c.set(k.as_str(), v.as_str());
        }
        c
    }

    /// Each spout task's share of `--rate` (tuples/s), if capped.
    pub fn rate_per_spout_task(&self) -> Option<f64> {
        self.rate
            .map(|r| r as f64 / f64::from(self.parallelism.max(1)))
    }
}

fn positive(name: &str, s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} must be a positive integer, not {s:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_and_values() {
        let o = parse(&["--topology", "word-count", "--json", "--rate=1000"]).unwrap();
        assert_eq!(o.topology, Topology::WordCount);
        assert_eq!(o.reliability, Reliability::AtMost);
        assert_eq!(o.duration, Duration::from_secs(20));
        assert_eq!(o.warmup, Duration::from_secs(3));
        assert_eq!(o.rate, Some(1000));
        assert!(o.json);
        let short = parse(&["--topology", "const-null", "--duration", "4s"]).unwrap();
        assert_eq!(short.warmup, Duration::from_secs(2));
    }

    #[test]
    fn errors_name_the_argument() {
        assert!(parse(&[]).unwrap_err().contains("--topology"));
        assert!(parse(&["--topology", "x"])
            .unwrap_err()
            .contains("--topology"));
        let e = parse(&["--topology", "const-null", "--bogus"]).unwrap_err();
        assert!(e.contains("--bogus"), "{e}");
        let e = parse(&["--topology", "const-null", "--rate", "0"]).unwrap_err();
        assert!(e.contains("--rate"), "{e}");
        let e = parse(&["--topology", "const-null", "--duration"]).unwrap_err();
        assert!(e.contains("--duration"), "{e}");
        let e = parse(&["--topology", "const-null", "--conf", "novalue"]).unwrap_err();
        assert!(e.contains("KEY=VALUE") && e.contains("novalue"), "{e}");
        let e = parse(&["--topology", "const-null", "--conf", "=1"]).unwrap_err();
        assert!(e.contains("--conf"), "{e}");
    }

    #[test]
    fn conf_pairs_reach_the_topology_config_last() {
        let key = "heron.streammgr.network.backpressure.highwatermark.mb";
        let o = parse(&[
            "--topology",
            "word-count",
            "--conf",
            &format!("{key}=0.5"),
            "--conf=topology.max.spout.pending=7",
            "--max-spout-pending",
            "100",
        ])
        .unwrap();
        let c = o.config();
        assert_eq!(c.get(key), Some("0.5"));
        assert_eq!(
            c.get(heron::Config::TOPOLOGY_MAX_SPOUT_PENDING),
            Some("7"),
            "--conf wins over the options it repeats"
        );
    }
}
