//! The tests of `settings`.

use super::*;

#[test]
fn ttl() {
    assert_eq!(parse_ttl("1h").unwrap().as_secs(), 3600);
    assert_eq!(parse_ttl("30m").unwrap().as_secs(), 1800);
    assert_eq!(parse_ttl("90").unwrap().as_secs(), 90);
    assert_eq!(parse_ttl("7d").unwrap().as_secs(), 604_800);
    assert!(parse_ttl("1y").is_err());
    assert!(parse_ttl("h").is_err());
    assert!(parse_ttl("0s").is_err());
}

#[test]
fn flags_win_over_file_and_defaults_fill_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ferry.toml");
    std::fs::write(
        &file,
        "space_max_bytes = 10\nupload_max_bytes = 20\njwt_secret = \"from-file\"\n",
    )
    .unwrap();
    let resolved = ServeArgs {
        config: Some(file),
        data: Some(dir.path().join("data")),
        space_max_bytes: Some(5),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    assert_eq!(resolved.config.app.limits.space_max_bytes, 5);
    assert_eq!(resolved.config.app.limits.upload_max_bytes, 20);
    assert_eq!(resolved.config.jwt_secret, b"from-file");
    assert!(!resolved.generated_secret);
    assert_eq!(resolved.config.app.limits.preview_max_chars, 4000);
    assert_eq!(resolved.config.addr.to_string(), "127.0.0.1:8080");
}

/// The README's settings table lists exactly the settings `ferry serve` reads, each with
/// its flag and its variable, and a default.
#[test]
fn the_readme_table_matches_the_settings() {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }
    let mut declared: Vec<(String, String)> = Serve::command()
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            let env = arg.get_env()?.to_str()?.to_owned();
            Some((format!("--{long}"), env))
        })
        .collect();
    declared.sort();
    let readme = include_str!("../../../../README.md");
    let table = readme
        .split("## Settings")
        .nth(1)
        .expect("the README has a Settings section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut documented: Vec<(String, String)> = table
        .lines()
        .filter(|line| line.starts_with("| `--"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert!(!cells[3].is_empty(), "no default for {line}");
            (
                cells[1].trim_matches('`').to_owned(),
                cells[2].trim_matches('`').to_owned(),
            )
        })
        .collect();
    documented.sort();
    assert_eq!(
        documented, declared,
        "README.md's settings table and ServeArgs differ"
    );
}

#[test]
fn every_new_setting_reaches_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let resolved = ServeArgs {
        data: Some(dir.path().join("data")),
        header_timeout_secs: Some(3),
        body_idle_timeout_secs: Some(4),
        max_connections: Some(5),
        drain_timeout_secs: Some(6),
        max_streams_per_principal: Some(7),
        sandbox_ops_per_thread: Some(8),
        sandbox_op_timeout_secs: Some(9),
        extract_workers: Some(3),
        extract_timeout_secs: Some(5),
        extract_memory_bytes: Some(1 << 28),
        office_renderer: Some("off".into()),
        preview_wait_secs: Some(2),
        webhook_allow_private: Some(true),
        webhook_timeout_secs: Some(11),
        s3_region: Some("eu-central-1".into()),
        jwks_url: Some("https://id.example.com/.well-known/jwks.json".into()),
        jwt_issuer: Some("https://id.example.com/".into()),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    let c = resolved.config;
    let secs = Duration::from_secs;
    assert_eq!(c.connections.header_timeout, secs(3));
    assert_eq!(c.body_idle_timeout, secs(4));
    assert_eq!(c.connections.max_connections, 5);
    assert_eq!(c.connections.drain_timeout, secs(6));
    assert_eq!(c.max_streams_per_principal, 7);
    assert_eq!(c.app.sandbox_limits.concurrent_ops, 8);
    assert_eq!(c.app.sandbox_limits.op_timeout, secs(9));
    assert_eq!(c.app.extract.max_concurrent, 3);
    assert_eq!(c.app.extract.timeout, secs(5));
    assert_eq!(c.app.extract.cpu_seconds, 5);
    assert_eq!(c.app.extract.memory_bytes, 1 << 28);
    assert_eq!(c.app.extract.office, None);
    assert_eq!(c.app.limits.preview_wait, secs(2));
    assert!(c.webhooks.allow_private);
    assert_eq!(c.webhooks.timeout, secs(11));
    assert_eq!(c.s3_region, "eu-central-1");
    assert_eq!(
        c.identity_provider,
        Some(IdentityProvider {
            keys: KeySource::Url("https://id.example.com/.well-known/jwks.json".into()),
            issuer: "https://id.example.com/".into(),
            audience: "authenticated".into(),
        })
    );
}

/// The limits commands run with under `c`, or the defaults where bubblewrap is missing
/// (the numbers the help gives are the same either way).
fn execute_limits(c: &Config) -> ExecLimits {
    match &c.app.execute {
        ExecuteSettings::Bubblewrap(settings) => settings.limits.clone(),
        _ => ExecLimits::default(),
    }
}

#[test]
fn commands_are_turned_off_or_bounded_by_the_settings() {
    let dir = tempfile::tempdir().unwrap();
    let off = ServeArgs {
        data: Some(dir.path().join("data")),
        execute: Some("off".into()),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    assert!(matches!(off.config.app.execute, ExecuteSettings::Off));
    let wrong = ServeArgs {
        data: Some(dir.path().join("data")),
        execute: Some("maybe".into()),
        ..Default::default()
    }
    .resolve();
    assert!(wrong.is_err());
    if on_path(Path::new("bwrap")).is_none() {
        ferry_test_support::peers::skip("bubblewrap (bwrap), which confines commands");
        return;
    }
    let bounded = ServeArgs {
        data: Some(dir.path().join("data")),
        execute_timeout_secs: Some(2000),
        execute_max_timeout_secs: Some(60),
        execute_processes: Some(0),
        execute_concurrent: Some(3),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    let limits = execute_limits(&bounded.config);
    // A default over the maximum is cut to it; a count is at least one.
    assert_eq!(limits.default_timeout, Duration::from_secs(60));
    assert_eq!(limits.processes, 1);
    assert_eq!(limits.concurrent, 3);

    let networked = ServeArgs {
        data: Some(dir.path().join("data")),
        addr: Some("0.0.0.0:9000".parse().unwrap()),
        execute_allow_hosts: Some(" pypi.org, *.pythonhosted.org,,mirror.internal:8443 ".into()),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    let ExecuteSettings::Bubblewrap(settings) = &networked.config.app.execute else {
        panic!("commands run where bubblewrap is installed");
    };
    let network = &settings.network;
    assert_eq!(
        network.describe(),
        "pypi.org, *.pythonhosted.org, mirror.internal:8443"
    );
    // The server's own port is never reached, on any address.
    assert_eq!(network.own_ports, vec![9000]);
    let refusing = ServeArgs {
        data: Some(dir.path().join("data")),
        execute_allow_hosts: Some("pypi.org, http://evil".into()),
        ..Default::default()
    };
    let Err(refused) = refusing.resolve() else {
        panic!("a URL is not a host");
    };
    assert!(
        format!("{refused:#}").contains("'http://evil' is not an allowed host"),
        "{refused:#}"
    );
}

#[test]
fn the_office_renderer_is_found_named_or_turned_off() {
    assert_eq!(office_renderer(Some("off")).unwrap(), None);
    if on_path(Path::new("bwrap")).is_none() {
        ferry_test_support::peers::skip("bubblewrap (bwrap), which confines the office renderer");
        return;
    }
    let named = office_renderer(Some("/bin/true")).unwrap().unwrap();
    assert_eq!(named.program, PathBuf::from("/bin/true"));
    assert!(named.sandbox.is_absolute() && named.sandbox.ends_with("bwrap"));
    // A bare name is looked up in PATH, as the worker (which has no PATH) cannot.
    let found = office_renderer(Some("true")).unwrap().unwrap().program;
    assert!(found.is_absolute() && found.ends_with("true"), "{found:?}");
    let err = office_renderer(Some("no-such-office-renderer")).unwrap_err();
    assert!(
        format!("{err:#}").contains("not an executable file"),
        "{err:#}"
    );
    // A folder is not a program.
    assert!(office_renderer(Some("/tmp")).is_err());
}

/// Every number `serve --help` gives as a default (`[default: N]`) is the value a server
/// started without that setting runs with, so the help cannot drift from the code.
#[test]
fn the_helps_defaults_are_the_defaults() {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }
    let dir = tempfile::tempdir().unwrap();
    let c = ServeArgs {
        data: Some(dir.path().join("data")),
        ..Default::default()
    }
    .resolve()
    .unwrap()
    .config;
    let running: &[(&str, u64)] = &[
        ("sweep-grace-secs", c.sweep_grace.as_secs()),
        ("space-max-bytes", c.app.limits.space_max_bytes),
        ("sandbox-max-bytes", c.app.limits.sandbox_max_bytes),
        ("upload-max-bytes", c.app.limits.upload_max_bytes),
        ("publish-max-bytes", c.app.limits.publish_max_bytes),
        ("preview-max-chars", c.app.limits.preview_max_chars as u64),
        (
            "header-timeout-secs",
            c.connections.header_timeout.as_secs(),
        ),
        ("body-idle-timeout-secs", c.body_idle_timeout.as_secs()),
        ("max-connections", c.connections.max_connections as u64),
        ("drain-timeout-secs", c.connections.drain_timeout.as_secs()),
        (
            "max-streams-per-principal",
            c.max_streams_per_principal as u64,
        ),
        (
            "sandbox-ops-per-thread",
            c.app.sandbox_limits.concurrent_ops as u64,
        ),
        (
            "sandbox-op-timeout-secs",
            c.app.sandbox_limits.op_timeout.as_secs(),
        ),
        ("extract-timeout-secs", c.app.extract.timeout.as_secs()),
        ("extract-memory-bytes", c.app.extract.memory_bytes),
        ("preview-wait-secs", c.app.limits.preview_wait.as_secs()),
        (
            "resumable-expiry-secs",
            c.app.limits.resumable_expiry.as_secs(),
        ),
        (
            "resumable-max-unfinished",
            c.app.limits.resumable_max_unfinished,
        ),
        ("webhook-timeout-secs", c.webhooks.timeout.as_secs()),
        (
            "execute-timeout-secs",
            execute_limits(&c).default_timeout.as_secs(),
        ),
        (
            "execute-max-timeout-secs",
            execute_limits(&c).max_timeout.as_secs(),
        ),
        ("execute-memory-bytes", execute_limits(&c).memory_bytes),
        ("execute-processes", execute_limits(&c).processes),
        (
            "execute-output-bytes",
            execute_limits(&c).output_bytes as u64,
        ),
        ("execute-sandbox-bytes", execute_limits(&c).sandbox_bytes),
    ];
    let mut checked = 0;
    for arg in Serve::command().get_arguments() {
        let (Some(long), Some(help)) = (arg.get_long(), arg.get_help()) else {
            continue;
        };
        let help = help.to_string();
        let Some(default) = help.split("[default: ").nth(1) else {
            continue;
        };
        let Ok(number) = default.trim_end_matches(']').trim().parse::<u64>() else {
            continue; // words (`none`, `the number of CPUs`, an address), not a number
        };
        let value = running
            .iter()
            .find(|(flag, _)| *flag == long)
            .unwrap_or_else(|| panic!("--{long} says [default: {number}]: list it here"))
            .1;
        assert_eq!(
            value, number,
            "--{long}: the help says {number}, a server runs with {value}"
        );
        checked += 1;
    }
    assert_eq!(
        checked,
        running.len(),
        "every listed setting has a numeric default in its help"
    );
}

#[test]
fn a_jwks_needs_an_issuer_and_an_issuer_needs_a_jwks() {
    let refused = |args: ServeArgs| {
        let dir = tempfile::tempdir().unwrap();
        let args = ServeArgs {
            data: Some(dir.path().join("data")),
            ..args
        };
        format!("{:#}", args.resolve().err().expect("refused"))
    };
    let why = refused(ServeArgs {
        jwks_url: Some("https://id.example.com/jwks.json".into()),
        ..Default::default()
    });
    assert!(why.contains("needs --jwt-issuer"), "{why}");
    let why = refused(ServeArgs {
        jwt_issuer: Some("https://id.example.com/".into()),
        ..Default::default()
    });
    assert!(why.contains("set --jwks-url"), "{why}");
    let why = refused(ServeArgs {
        jwks_url: Some("id.example.com/jwks.json".into()),
        jwt_issuer: Some("x".into()),
        ..Default::default()
    });
    assert!(why.contains("is not a URL"), "{why}");
    let why = refused(ServeArgs {
        jwks_url: Some("ftp://id.example.com/jwks.json".into()),
        jwt_issuer: Some("x".into()),
        ..Default::default()
    });
    assert!(why.contains("https://"), "{why}");
}

#[test]
fn unknown_file_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ferry.toml");
    std::fs::write(&file, "spaces_max_bytes = 10\n").unwrap();
    let err = ServeArgs {
        config: Some(file),
        data: Some(dir.path().join("data")),
        ..Default::default()
    }
    .resolve()
    .err()
    .unwrap();
    assert!(format!("{err:#}").contains("unknown field"));
}
