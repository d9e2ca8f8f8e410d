//! The request latencies the metrics record are folded into their histograms' buckets on their
//! own: a server nobody scrapes does not grow with every request it answers.
//!
//! A test binary of its own, because it reads the process's resident memory.

use std::time::Duration;

/// The process's resident memory, in KiB.
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

#[test]
fn recorded_latencies_do_not_pile_up_while_nobody_reads_the_metrics() {
    let _ = ferry_server::metrics::handle();
    let latency = metrics::histogram!(
        "ferry_http_request_duration_seconds",
        "route" => "/api/spaces/{space}/files/{*path}", "method" => "GET", "status" => "200"
    );
    // Half a million requests' latencies: 4 MB of samples while they are kept.
    let answer_many = || {
        for i in 0..500_000u32 {
            latency.record(f64::from(i % 1000) * 1e-6);
        }
    };
    let upkeep = Duration::from_millis(2500);
    answer_many();
    std::thread::sleep(upkeep);
    let before = resident_kib();
    for _ in 0..4 {
        answer_many();
        std::thread::sleep(upkeep);
    }
    let grown = resident_kib().saturating_sub(before);
    // Kept, the four later batches alone would be 16 MB.
    assert!(grown < 6 * 1024, "resident memory grew by {grown} KiB");
}
