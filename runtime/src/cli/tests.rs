use super::*;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("heron").chain(args.iter().copied()))
}

#[test]
fn submit_takes_flags_then_cluster_binary_and_topology_args() {
    let cli = parse(&[
        "submit",
        "--config-property",
        "heron.statemgr.root.path=/s",
        "--verbose",
        "local/alice",
        "./bin/wc",
        "--containers",
        "3",
        "--verbose",
        "x",
    ])
    .unwrap();
    let Command::Submit(a) = cli.command else {
        panic!("not submit")
    };
    assert_eq!(a.common.config_property, ["heron.statemgr.root.path=/s"]);
    assert!(a.common.verbose);
    assert_eq!(a.common.cluster, "local/alice");
    assert_eq!(a.binary, PathBuf::from("./bin/wc"));
    assert_eq!(a.args, ["--containers", "3", "--verbose", "x"]);
}

#[test]
fn topology_args_may_follow_a_double_dash() {
    let cli = parse(&["submit", "local", "./wc", "--", "--duration", "5s"]).unwrap();
    let Command::Submit(a) = cli.command else {
        panic!("not submit")
    };
    assert_eq!(a.args, ["--duration", "5s"]);
}

#[test]
fn missing_arguments_are_usage_errors() {
    for args in [
        &["submit"][..],
        &["submit", "local"],
        &["kill"],
        &["kill", "local"],
        &["frobnicate"],
        &[],
    ] {
        let err = parse(args).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{args:?}: {err}");
    }
    assert_eq!(cli_main_from(["heron", "kill", "local"]), 2);
}

#[test]
fn kill_and_version_parse() {
    let cli = parse(&["kill", "local/bob/prod", "WordCount"]).unwrap();
    let Command::Kill(a) = cli.command else {
        panic!("not kill")
    };
    assert_eq!(
        (a.common.cluster.as_str(), a.topology.as_str()),
        ("local/bob/prod", "WordCount")
    );
    assert!(matches!(
        parse(&["version"]).unwrap().command,
        Command::Version
    ));
    assert_eq!(cli_main_from(["heron", "version"]), 0);
}

#[test]
fn bad_cluster_or_missing_binary_fail_with_exit_code_1() {
    assert_eq!(cli_main_from(["heron", "submit", "aurora", "/bin/true"]), 1);
    assert_eq!(
        cli_main_from(["heron", "submit", "local/../x", "/bin/true"]),
        1
    );
    assert_eq!(cli_main_from(["heron", "kill", "mesos", "T"]), 1);
    let missing = format!("/nonexistent/heron-test-{}", std::process::id());
    assert_eq!(
        cli_main_from(["heron", "submit", "local", missing.as_str()]),
        1
    );
}

#[test]
fn control_commands_parse() {
    for verb in ["activate", "deactivate"] {
        let cli = parse(&[verb, "--config-property", "k=v", "localzk", "WordCount"]).unwrap();
        let (Command::Activate(a) | Command::Deactivate(a)) = cli.command else {
            panic!("{verb}")
        };
        assert_eq!(
            (a.common.cluster.as_str(), a.topology.as_str()),
            ("localzk", "WordCount")
        );
        assert_eq!(a.common.config_property, ["k=v"]);
    }
    let cli = parse(&["restart", "local", "WordCount", "2"]).unwrap();
    let Command::Restart(a) = cli.command else {
        panic!("restart")
    };
    assert_eq!(a.container, Some(2));
    let cli = parse(&["restart", "local", "WordCount", "-1"]).unwrap();
    let Command::Restart(a) = cli.command else {
        panic!("restart")
    };
    assert_eq!(a.container, Some(-1));
    let cli = parse(&[
        "update",
        "local",
        "WordCount",
        "--component-parallelism",
        "split:4",
        "--component-parallelism",
        "count:3",
        "--container-number",
        "3",
        "--dry-run",
    ])
    .unwrap();
    let Command::Update(a) = cli.command else {
        panic!("update")
    };
    assert_eq!(a.component_parallelism, ["split:4", "count:3"]);
    assert_eq!(a.container_number, Some(3));
    assert!(a.dry_run);
    assert_eq!(cli_main_from(["heron", "update", "local", "WordCount"]), 1);
    assert_eq!(
        cli_main_from([
            "heron",
            "update",
            "local",
            "W",
            "--runtime-config",
            "a:b",
            "--container-number",
            "2"
        ]),
        1
    );
}
