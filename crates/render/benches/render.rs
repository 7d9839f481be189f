//! Rendering a large run: the page of a 100,000-event history.
//!
//! # What is measured
//!
//! `render/100k-events`: [`locksim_render::render_html`] — holds, metrics, the explanation of
//! every violation, the JSON and the page — for one real run of about 100,000 events: the
//! `central` lock with 24 clients over 250 s of simulated workload under `mixed` faults
//! (the run is simulated once, before measuring; its messages are drawn too).
//!
//! The page is also written to `target/render-100k.html`, to time opening it in a browser:
//!
//! ```text
//! cargo bench -p locksim-render --bench render
//! time chromium --headless --no-sandbox --disable-gpu --dump-dom target/render-100k.html >/dev/null
//! ```

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use locksim_core::FaultKind;
use locksim_explore::{check_scenario, parse_setting, Setup};
use locksim_render::{render_html, Run};

fn bench(c: &mut Criterion) {
    let settings: Vec<(String, String)> = ["clients=24", "duration=250s"]
        .iter()
        .map(|s| parse_setting(s).expect("valid setting"))
        .collect();
    let setup = Setup::registered("central", &settings).expect("central exists");
    let scenario = setup.scenario(1, &[FaultKind::Mixed]);
    let started = Instant::now();
    let out = check_scenario(&scenario, setup.algo.clone());
    let history = out.history.expect("the run completes");
    eprintln!(
        "simulated {} events and {} messages in {:.1}s",
        history.events.len(),
        history.messages.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        history.events.len() >= 100_000,
        "{} events",
        history.events.len()
    );
    let run = Run {
        scenario: &scenario,
        history: &history,
        verdict: &out.verdict,
        title: "central, 24 clients, 250 s, mixed faults".into(),
        notes: vec![],
        record: false,
        session: false,
    };
    let page = render_html(&run);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/render-100k.html");
    std::fs::write(&path, &page).expect("target/ is writable");
    eprintln!("wrote {} ({} MiB)", path.display(), page.len() >> 20);
    let mut g = c.benchmark_group("render");
    g.sample_size(10);
    g.bench_function("100k-events", |b| b.iter(|| render_html(&run).len()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
