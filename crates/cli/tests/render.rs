//! `locksim render`: every trace of the corpus becomes one self-contained page; bad input is
//! named and refused; the same trace renders to the same bytes.

use std::path::{Path, PathBuf};

mod common;
use common::locksim;

fn traces() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no traces in {}", dir.display());
    v
}

/// The corpus trace whose file name contains `part`.
fn trace_named(part: &str) -> PathBuf {
    traces()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(part))
        .unwrap_or_else(|| panic!("no trace named *{part}* in traces/"))
}

/// Runs `locksim ARGS`, expects exit 0, and parses its stdout as one JSON object.
fn ok_json(args: &[&str]) -> serde_json::Value {
    let o = locksim(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("render-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The page's embedded data, parsed.
fn data(html: &str) -> serde_json::Value {
    let open = "<script type=\"application/json\" id=\"locksim-data\">";
    let start = html.find(open).expect("the data element") + open.len();
    let len = html[start..]
        .find("</script>")
        .expect("the data element ends");
    serde_json::from_str(&html[start..start + len]).expect("the data is JSON")
}

/// Nothing in the page is fetched: no URL, no external script, style sheet, image or frame.
fn assert_self_contained(html: &str, what: &str) {
    let lower = html.to_ascii_lowercase();
    for bad in [
        "http://",
        "https://",
        "<script src",
        "<link",
        "<img",
        "<iframe",
        "@import",
        "url(",
        "<object",
        "<embed",
    ] {
        assert!(!lower.contains(bad), "{what}: the page contains `{bad}`");
    }
    assert!(lower.starts_with("<!doctype html>"), "{what}");
    assert_eq!(
        lower.matches("<script").count(),
        2,
        "{what}: one data element and one inline script"
    );
}

#[test]
fn every_trace_renders_to_a_self_contained_page_with_its_data() {
    for t in traces() {
        let name = t.file_stem().unwrap().to_string_lossy().into_owned();
        let out = tmp(&format!("{name}.html"));
        let _ = std::fs::remove_file(&out);
        let o = locksim(&["render", t.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let html = std::fs::read_to_string(&out).unwrap();
        assert_self_contained(&html, &name);
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
        let d = data(&html);
        let events = trace["events"].as_array().map(|e| e.len());
        if let Some(n) = events {
            assert_eq!(
                d["events"].as_u64(),
                Some(n as u64),
                "{name}: every event drawn"
            );
        }
        let violations = trace["verdict"]["violations"].as_array().unwrap().len();
        assert_eq!(
            d["violations"].as_array().unwrap().len(),
            violations,
            "{name}"
        );
        assert!(
            !d["holds"].as_array().unwrap().is_empty(),
            "{name}: holds drawn"
        );
        assert!(
            !d["msgs"].as_array().unwrap().is_empty(),
            "{name}: re-run gives messages"
        );
        assert!(!d["lanes"].as_array().unwrap().is_empty(), "{name}");
        // Each violation is explained in words, on the page, with its kind.
        for v in d["violations"].as_array().unwrap() {
            let text = v["text"].as_str().unwrap();
            assert!(text.len() > 40, "{name}: a paragraph, not a stub: {text}");
        }
        assert!(
            html.contains("class=\"violation\""),
            "{name}: violations listed"
        );
    }
}

#[test]
fn the_same_trace_renders_to_the_same_bytes() {
    let t = trace_named("k5-pause");
    let (a, b) = (tmp("same-a.html"), tmp("same-b.html"));
    for p in [&a, &b] {
        let o = locksim(&["render", t.to_str().unwrap(), "-o", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0));
    }
    assert!(
        std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
        "render is deterministic"
    );
}

#[test]
fn the_double_grant_is_explained_in_plain_words() {
    let t = trace_named("k5-pause");
    let out = tmp("k5-pause.html");
    assert_eq!(
        locksim(&["render", t.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    let d = data(&std::fs::read_to_string(&out).unwrap());
    let s1 = &d["violations"][0];
    assert_eq!(s1["kind"], "S1");
    let text = s1["text"].as_str().unwrap();
    for needle in [
        "paused",
        "after its lease had ended",
        "double grant",
        "c1",
        "c2",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
    let w = s1["window"].as_array().unwrap();
    assert!(w[0].as_u64() < w[1].as_u64(), "an overlap window");
}

#[test]
fn embedded_events_are_drawn_without_a_rerun() {
    let t = trace_named("k5-redlock");
    let out = tmp("norerun.html");
    let j = ok_json(&[
        "render",
        "--no-rerun",
        "--json",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(j["rerun"], false);
    assert_eq!(j["messages"], 0);
    let html = std::fs::read_to_string(&out).unwrap();
    assert_self_contained(&html, "no-rerun");
    assert!(
        html.contains("without re-running"),
        "the page says where its events came from"
    );
}

#[test]
fn bad_input_is_named_and_never_overwrites_a_foreign_file() {
    // A malformed trace: exit 2, one line naming the file and the problem.
    let bad = tmp("bad.json");
    std::fs::write(
        &bad,
        "{\"format\":\"locksim-trace\",\"version\":1,\"locksim\":\"0\"",
    )
    .unwrap();
    let o = locksim(&[
        "render",
        bad.to_str().unwrap(),
        "-o",
        tmp("bad.html").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.json") && err.contains("truncated"),
        "{err}"
    );
    // A trace with a wrong field type: named.
    let t = traces().remove(0);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    v["scenario"]["seed"] = serde_json::json!("five");
    let wrong = tmp("wrong.json");
    std::fs::write(&wrong, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = locksim(&[
        "render",
        wrong.to_str().unwrap(),
        "-o",
        tmp("wrong.html").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("wrong.json") && err.contains("five"), "{err}");
    // Embedded events that do not fit the cluster: named by index and field, never a panic.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    v["events"][3]["node"] = serde_json::json!(99);
    let odd = tmp("odd.json");
    std::fs::write(&odd, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = locksim(&[
        "render",
        "--no-rerun",
        odd.to_str().unwrap(),
        "-o",
        tmp("odd.html").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("odd.json") && err.contains("events[3]") && err.contains("node 99"),
        "{err}"
    );
    // An existing file that locksim did not write is kept.
    let precious = tmp("precious.html");
    std::fs::write(&precious, "my notes").unwrap();
    let o = locksim(&[
        "render",
        t.to_str().unwrap(),
        "-o",
        precious.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "my notes");
    // Its own page is replaced (re-rendering is fine).
    let page = tmp("again.html");
    for _ in 0..2 {
        let o = locksim(&["render", t.to_str().unwrap(), "-o", page.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0));
    }
}

#[test]
fn a_trace_without_events_is_rerun_to_get_them() {
    let t = trace_named("k5-redlock");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    let n = v["events"].as_array().unwrap().len();
    v.as_object_mut().unwrap().remove("events");
    let bare = tmp("bare.json");
    std::fs::write(&bare, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = tmp("bare.html");
    let j = ok_json(&[
        "render",
        "--json",
        bare.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(j["rerun"], true);
    assert_eq!(j["events"], n);
    // Without a re-run there is nothing to draw: exit 2, and it says why.
    let o = locksim(&[
        "render",
        "--no-rerun",
        bare.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("embeds no events"));
}

#[test]
fn campaign_report_links_each_violated_cell_to_its_shrunk_timeline() {
    let dir = tmp("report");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.html");
    let args = [
        "campaign",
        "--algo",
        "central,central-fencing",
        "--faults",
        "none,pause",
        "--seeds",
        "8",
        "--jobs",
        "2",
        "--json",
        "--report",
        report.to_str().unwrap(),
    ];
    let o = locksim(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    // Not a terminal: plain progress lines, the last one at 100%.
    assert!(err.contains("32/32 seeds (100%)"), "{err}");
    // Metrics in the JSON, durations in ns, next to the fields CI reads.
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cells = v["cells"].as_array().unwrap();
    for c in cells {
        for f in [
            "seeds",
            "s1_violations",
            "s2_violations",
            "acquires",
            "acquires_failed",
            "acquires_unknown",
            "retries",
            "expired_while_held",
            "messages_sent",
            "messages_dropped",
        ] {
            assert!(c[f].is_u64(), "{f} in {c}");
        }
        for f in [
            "acquire_latency_p50_ns",
            "acquire_latency_p99_ns",
            "wait_p50_ns",
            "wait_p99_ns",
            "hold_p50_ns",
            "hold_p99_ns",
        ] {
            assert!(c[f].as_u64().is_some_and(|n| n > 0), "{f} in {c}");
        }
        assert!(c["acquire_latency_p50_ns"].as_u64() <= c["acquire_latency_p99_ns"].as_u64());
        assert!(c["messages_sent"].as_u64().unwrap() > 0);
    }
    // The page: self-contained, one link per violated cell, each to a page that exists.
    let html = std::fs::read_to_string(&report).unwrap();
    assert_self_contained_report(&html);
    let violated = cells
        .iter()
        .filter(|c| !c["first_failing_seed"].is_null())
        .count();
    assert!(violated >= 2, "pause breaks both algorithms within 8 seeds");
    let links: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .filter(|l| l.ends_with(".html"))
        .collect();
    assert_eq!(links.len(), violated, "{links:?}");
    // Each violated cell's first failing seed plotted over time (inline SVG, no namespace URL).
    assert_eq!(
        html.matches("<figure class=\"latency\">").count(),
        violated,
        "one latency plot per violated cell"
    );
    assert!(html.contains("<figure class=\"latency\"><figcaption>"));
    for l in &links {
        assert!(l.starts_with("report-files/"), "{l}");
        let page = std::fs::read_to_string(dir.join(l)).unwrap();
        assert!(
            page.contains("class=\"violation\""),
            "{l}: a violation on the page"
        );
        assert!(
            page.contains("<figure id=\"latency\"><svg"),
            "{l}: the run's latency over time"
        );
        let trace = dir.join(l.replace(".html", ".json"));
        let o = locksim(&["replay", trace.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{l}: the shrunk trace replays");
    }
    // Running it again writes the same traces (never a different one under the same name).
    let o = locksim(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A file at the report's path that locksim did not write is kept.
    std::fs::write(&report, "not ours").unwrap();
    let o = locksim(&args);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "not ours");
}

fn assert_self_contained_report(html: &str) {
    let lower = html.to_ascii_lowercase();
    for bad in ["http://", "https://", "<script", "<link", "<img", "url("] {
        assert!(!lower.contains(bad), "report contains `{bad}`");
    }
}

#[test]
fn run_draws_its_page_with_html() {
    let page = tmp("run5.html");
    let _ = std::fs::remove_file(&page);
    let o = locksim(&[
        "run",
        "--algo",
        "redlock",
        "--seed",
        "5",
        "--faults",
        "pause",
        // Seed 5 is a datagram run that double-grants (over TCP this seed does not).
        "--set",
        "network=datagram",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "seed 5 violates S1: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html, "run --html");
    let d = data(&html);
    assert_eq!(d["violations"][0]["kind"], "S1");
    assert!(
        d["msgs"].as_array().unwrap().len() > 1000,
        "the run's messages are drawn"
    );
}

#[test]
fn campaign_files_report_one_section_per_file() {
    let dir = tmp("files-report");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.toml"),
        "name = \"pauses break central\"\nalgorithm = \"central\"\nfaults = [\"pause\"]\nseeds = 8\nexpect = [\"S1\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.toml"),
        "name = \"no faults, no violations\"\nalgorithm = \"redlock\"\nfaults = [\"none\"]\nseeds = 4\nexpect = \"safe\"\n",
    )
    .unwrap();
    let report = dir.join("r.html");
    let o = locksim(&[
        "campaign",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert_self_contained_report(&html);
    for heading in ["pauses break central", "no faults, no violations", "PASS"] {
        assert!(html.contains(heading), "`{heading}` missing");
    }
    assert_eq!(html.matches("<h2>").count(), 2, "one section per file");
    let link = html.split("href=\"").nth(1).unwrap();
    let link = &link[..link.find('"').unwrap()];
    assert!(
        link.starts_with("r-files/central-s1-") && link.ends_with(".html"),
        "{link}"
    );
    assert!(dir.join(link).exists(), "{link}");
}
