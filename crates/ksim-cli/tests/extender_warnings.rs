//! An HTTP extender that cannot be reached is reported on stderr once per run, naming its URL
//! and what it costs; a forked run reports it for the trunk and for each branch (each branch
//! is a run of its own from the fork on, with extenders of its own).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

fn ksim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
}

/// A port on 127.0.0.1 nothing listens on (bound, then released): calls are refused at once.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = l.local_addr().expect("local address").port();
    drop(l);
    port
}

/// A scenario of two nodes and pods arriving over 40 s, scheduled with an ignorable extender
/// on `port`.
fn write_scenario(dir: &Path, port: u16) -> std::path::PathBuf {
    let config = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         extenders:\n  - urlPrefix: http://127.0.0.1:{port}/scheduler\n    filterVerb: filter\n    \
         ignorable: true\n    httpTimeout: 1s\n"
    );
    std::fs::write(dir.join("scheduler.yaml"), config).expect("write config");
    let mut trace = String::new();
    for i in 0..5 {
        trace.push_str(&format!(
            "{{\"at\": \"{}s\", \"kind\": \"CreatePod\", \"pod\": {{\"metadata\": {{\"name\": \"p{i}\"}}, \
             \"spec\": {{\"containers\": [{{\"name\": \"c\", \"resources\": {{\"requests\": {{\"cpu\": \"100m\"}}}}}}]}}}}}}\n",
            i * 10
        ));
    }
    std::fs::write(dir.join("trace.jsonl"), trace).expect("write trace");
    let scenario = "name: ext\nseed: 1\nhorizon: 1m\ncluster:\n  pools:\n    - name: workers\n      \
                    count: 2\n      template:\n        status: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n\
                    workload:\n  traces: [trace.jsonl]\nscheduler:\n  configFile: scheduler.yaml\n";
    let p = dir.join("scenario.yaml");
    std::fs::write(&p, scenario).expect("write scenario");
    p
}

fn warnings(o: &Output) -> Vec<String> {
    assert!(
        o.status.success(),
        "ksim failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("cannot be reached"))
        .map(str::to_string)
        .collect()
}

#[test]
fn an_unreachable_extender_is_reported_once_per_run_and_per_fork_branch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = closed_port();
    let scenario = write_scenario(dir.path(), port);
    let url = format!("http://127.0.0.1:{port}/scheduler");

    let plain = ksim()
        .arg("run")
        .arg(&scenario)
        .args(["-q", "--out"])
        .arg(dir.path().join("plain"))
        .output()
        .expect("run ksim");
    let w = warnings(&plain);
    assert_eq!(w.len(), 1, "one warning for the run: {w:?}");
    assert!(w[0].starts_with("warning: "), "{}", w[0]);
    assert!(w[0].contains(&url), "names the URL: {}", w[0]);
    assert!(w[0].contains("ignorable"), "says what it costs: {}", w[0]);

    // Forked at 25 s with an empty variant: the trunk reports it, and so does each branch
    // (base and the variant), naming the branch.
    std::fs::write(dir.path().join("same.yaml"), "name: same\n").expect("write variant");
    let forked = ksim()
        .arg("run")
        .arg(&scenario)
        .args(["-q", "--fork-at", "25s", "--variant"])
        .arg(dir.path().join("same.yaml"))
        .arg("--out")
        .arg(dir.path().join("forked"))
        .output()
        .expect("run ksim");
    let w = warnings(&forked);
    assert_eq!(w.len(), 3, "trunk, base and variant branch: {w:?}");
    assert_eq!(
        w.iter()
            .filter(|l| l.starts_with("warning: branch base: "))
            .count(),
        1,
        "{w:?}"
    );
    assert_eq!(
        w.iter()
            .filter(|l| l.starts_with("warning: branch same: "))
            .count(),
        1,
        "{w:?}"
    );
    assert!(w.iter().all(|l| l.contains(&url)), "{w:?}");
}
