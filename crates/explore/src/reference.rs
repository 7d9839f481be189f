//! The reference `locksim list` prints: the algorithms with their settings, the workload and
//! per-client settings, the fault kinds and types, triggers, properties, exit codes and the
//! shipped real-mode clients, as text ([`text`]), JSON ([`json`]) or the Markdown page
//! docs/reference.md is ([`markdown`]). All three read the same registries, so the page
//! cannot drift from the code. What lives above this crate (the real-mode clients, running the
//! program for its JSON shapes) comes in through [`Sources`]. [`long_help`] is `--help`'s
//! text around the same tables.

use locksim_core::scenario_file::{CLIENT_FIELDS, FAULT_TYPES, TRIGGER_FIELDS};
use locksim_core::trigger::TRIGGER_EVENTS;
use locksim_core::{FaultKind, Property};
use serde_json::{json, Value};

/// A lock library shipped for real mode.
pub struct Client {
    /// Its name in scenario files.
    pub name: &'static str,
    /// The library and the lock it uses.
    pub library: &'static str,
    /// Its registry package.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// `python`, `javascript` or `rust`.
    pub language: &'static str,
    /// The algorithms whose servers it runs against.
    pub algorithms: &'static [&'static str],
}

/// What the reference needs from above this crate.
pub struct Sources<'a> {
    /// The program's name, for the commands the page shows.
    pub program: &'a str,
    /// The shipped real-mode clients.
    pub clients: Vec<Client>,
    /// What real mode does not run of an algorithm's knob, and why (`refused VALUES: WHY`).
    pub real_note: &'a dyn Fn(&str, &str) -> Option<String>,
    /// Runs the program with these arguments and reads the JSON of its first line (for the
    /// page's JSON shapes).
    pub sample: &'a dyn Fn(&[&str]) -> Result<Value, String>,
}

/// What each property means, one line each: `--help` and the reference print these.
pub const PROPERTY_MEANINGS: [(Property, &str); 7] = [
    (
        Property::S1,
        "mutual exclusion: no two clients hold the same lock at the same true time",
    ),
    (
        Property::S2,
        "resource safety: the resource never accepts a write from a grant after a write from a \
         grant the lock service made later (what fencing tokens are for)",
    ),
    (
        Property::S3,
        "linearizability: the lock operations the clients saw are those of a correct lease \
         lock, up to the declared clock uncertainty (S1 without S3 means the service behaved \
         and a client acted late; S3 means the service itself granted too early), and the \
         resource's writes are those of a register (each write swaps in a value)",
    ),
    (
        Property::S4,
        "own-incarnation release: a release (a retried one included) never frees a lock that \
         a later grant holds",
    ),
    (
        Property::L1,
        "after a holder crashes or stops for good, a waiting client gets the lock within \
         ttl + lock delay + slack",
    ),
    (
        Property::L2,
        "a healthy holder that renews keeps its lock through outages shorter than \
         ttl - renew_every (less the retry slack)",
    ),
    (
        Property::L3,
        "no lock stays taken longer than ttl + slack while no live client believes it holds it",
    ),
];

/// The meaning of property `p` ([`PROPERTY_MEANINGS`]).
fn meaning(p: Property) -> &'static str {
    PROPERTY_MEANINGS
        .iter()
        .find(|m| m.0 == p)
        .map_or("", |m| m.1)
}

/// What each key of a trigger (`after = { … }`) means, by key of [`TRIGGER_FIELDS`].
const TRIGGER_FIELD_HELP: [(&str, &str); 5] = [
    ("node", "the node (or group) whose event it waits for"),
    ("event", "one of the events below"),
    (
        "nth",
        "which matching event fires it (default 1, the first)",
    ),
    (
        "delay",
        "true time after that event (default 0: at once, before the node sends more)",
    ),
    ("client", "for `grants`: only grants to this client count"),
];

/// Said of triggers after their fields.
const TRIGGER_NEVER_FIRED: &str =
    "A trigger whose event never comes is reported as never fired and applies nothing.";

/// What every `[[fault]]` entry has, said before the fault types.
const FAULT_ENTRY: [&str; 3] = [
    "Fault types of explicit plans ([[fault]] entries in campaign files and --plan files;",
    "every entry has `at` (or `after`) and `type`; nodes by name: n1.., c1.., res, or servers/clients/all;",
    "`mode = \"reset\"` makes a cut refuse connections instead of dropping messages):",
];

/// Said before the shipped real-mode clients.
const REAL_CLIENTS: [&str; 3] = [
    "Lock libraries for `locksim real` (a [real] table: client = \"NAME\", or client_command =",
    "[\"prog\", \"arg\"] for your own; protocol in docs/adapters.md; libraries installed by",
    "scripts/install-adapters.sh target/adapters):",
];

/// `list --json`'s object.
pub fn json(s: &Sources) -> Value {
    let algorithms: Vec<Value> = locksim_algos::algorithms()
        .iter()
        .map(|(name, what)| {
            let settings: Vec<Value> = locksim_algos::knobs(name)
                .unwrap_or(&[])
                .iter()
                .map(|k| {
                    let mut v = json!({"key": k.key, "help": k.help, "default": k.default});
                    if let Some(r) = (s.real_note)(name, k.key) {
                        v["real"] = json!(r);
                    }
                    v
                })
                .collect();
            let client_defaults: Vec<Value> = locksim_algos::client_defaults(name)
                .iter()
                .map(|d| {
                    json!({
                        "key": d.key,
                        "fraction_of_ttl": [d.num, d.den],
                        "source": d.source,
                    })
                })
                .collect();
            json!({
                "name": name,
                "what": what,
                "settings": settings,
                "client_defaults": client_defaults,
            })
        })
        .collect();
    let workload: Vec<Value> = crate::setup::WORKLOAD_KNOBS
        .iter()
        .map(|(k, help)| json!({"key": k, "help": help}))
        .collect();
    let fault_shape: Vec<Value> = crate::faultgen::FAULT_KNOBS
        .iter()
        .map(|(k, help)| json!({"key": k, "help": help}))
        .collect();
    let faults: Vec<String> = FaultKind::ALL.iter().map(|k| k.to_string()).collect();
    let properties: Vec<String> = Property::ALL.iter().map(|p| p.to_string()).collect();
    let clients: Vec<Value> = CLIENT_FIELDS
        .iter()
        .map(|(k, help)| json!({"key": k, "help": help}))
        .collect();
    let fault_types: Vec<Value> = FAULT_TYPES
        .iter()
        .map(|(t, fields, help)| json!({"type": t, "fields": fields_of(fields), "help": help}))
        .collect();
    json!({
        "algorithms": algorithms,
        "workload": workload,
        "fault_shape": fault_shape,
        "client": clients,
        "faults": faults,
        "fault_types": fault_types,
        "trigger": {
            "fields": TRIGGER_FIELDS.split(", ").collect::<Vec<_>>(),
            "events": TRIGGER_EVENTS,
        },
        "properties": properties,
        "clients": s.clients
            .iter()
            .map(|a| json!({
                "name": a.name,
                "library": a.library,
                "package": a.package,
                "version": a.version,
                "language": a.language,
                "algorithm": a.algorithms,
            }))
            .collect::<Vec<_>>(),
    })
}

/// A fault type's fields (`"a, b, duration"`) as a list.
fn fields_of(fields: &str) -> Vec<&str> {
    fields.split(", ").filter(|f| !f.is_empty()).collect()
}

/// A client default's value: `0` or `ttl × 2/15`.
fn client_default_value(d: &locksim_algos::ClientDefault) -> String {
    if d.num == 0 {
        "0".to_string()
    } else {
        format!("ttl × {}/{}", d.num, d.den)
    }
}

/// `list`'s text.
pub fn text(s: &Sources) -> String {
    // Names padded to the widest of their list, so that a long one does not shift its help.
    let w = |names: &mut dyn Iterator<Item = &str>| names.map(str::len).max().unwrap_or(0).max(16);
    let mut t = String::from("Algorithms (--algo NAME) and their settings (--set key=value):\n");
    let aw = w(&mut locksim_algos::algorithms().iter().map(|a| a.0));
    let kw = w(&mut locksim_algos::algorithms()
        .iter()
        .flat_map(|a| locksim_algos::knobs(a.0).unwrap_or(&[]))
        .map(|k| k.key));
    for (name, what) in locksim_algos::algorithms() {
        t += &format!("  {name:<aw$} {what}\n");
        for k in locksim_algos::knobs(name).unwrap_or(&[]) {
            t += &format!("      {:<kw$} {} (default {})\n", k.key, k.help, k.default);
            if let Some(r) = (s.real_note)(name, k.key) {
                t += &format!("      {:<kw$} real mode: {r}\n", "");
            }
        }
        for d in locksim_algos::client_defaults(name) {
            t += &format!(
                "      {:<kw$} workload default for {name}: {}, {}\n",
                d.key,
                client_default_value(d),
                d.source
            );
        }
    }
    t +=
        "\nWorkload settings (--set key=value, any algorithm; durations need a unit: 500ms, 2s):\n";
    for (k, help) in crate::setup::WORKLOAD_KNOBS {
        t += &format!("  {k:<16} {help}\n");
    }
    t += "\nFault-shape settings (--set key=value, or --vary in a sweep; unset, they scale with the TTL):\n";
    for (k, help) in crate::faultgen::FAULT_KNOBS {
        t += &format!("  {k:<16} {help}\n");
    }
    t += "\nPer-client settings (--set cN.key=value, or a [client.cN] table in a campaign file):\n";
    for (k, help) in CLIENT_FIELDS {
        t += &format!("  {k:<16} {help}\n");
    }
    t += "\nFault kinds (--faults KIND[,KIND]), drawn from each seed:\n";
    for k in FaultKind::ALL {
        t += &format!("  {k}\n");
    }
    t += "\n";
    for line in FAULT_ENTRY {
        t += line;
        t += "\n";
    }
    let tw = w(&mut FAULT_TYPES.iter().map(|f| f.0));
    for (name, fields, help) in FAULT_TYPES {
        t += &format!("  {name:<tw$} {help}\n");
        if !fields.is_empty() {
            t += &format!("      fields: {fields}\n");
        }
    }
    t += &format!(
        "\nTriggers: `after = {{ {TRIGGER_FIELDS} }}` in place of `at` aims a fault at an event (simulator only):\n"
    );
    for (key, help) in trigger_fields() {
        if key == "event" {
            t += &format!("  {key:<7} one of: {TRIGGER_EVENTS}\n");
        } else {
            t += &format!("  {key:<7} {help}\n");
        }
    }
    t += &format!("  {TRIGGER_NEVER_FIRED}\n");
    t += "\n";
    for line in REAL_CLIENTS {
        t += line;
        t += "\n";
    }
    let nw = w(&mut s.clients.iter().map(|a| a.name));
    for a in &s.clients {
        t += &format!(
            "  {:<nw$} {} {}=={} ({}), on the servers of {}\n",
            a.name,
            a.library,
            a.package,
            a.version,
            a.language,
            a.algorithms.join(" or ")
        );
    }
    t
}

/// The keys of a trigger in [`TRIGGER_FIELDS`]'s order, each with its help (empty when
/// [`TRIGGER_FIELD_HELP`] lacks it: a test sees that).
fn trigger_fields() -> Vec<(&'static str, &'static str)> {
    TRIGGER_FIELDS
        .split(", ")
        .map(|k| {
            let help = TRIGGER_FIELD_HELP
                .iter()
                .find(|h| h.0 == k)
                .map_or("", |h| h.1);
            (k, help)
        })
        .collect()
}

/// [`TRIGGER_EVENTS`] as (event names, what they are): split at its top-level commas, each
/// item's parenthesis its explanation; items without one share the next item's
/// (`accepts write, rejects write (…)`).
fn trigger_events() -> Vec<(Vec<String>, String)> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, b) in TRIGGER_EVENTS.bytes().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' if depth == 0 => {
                items.push(&TRIGGER_EVENTS[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&TRIGGER_EVENTS[start..]);
    let mut events = Vec::new();
    let mut names = Vec::new();
    for item in items {
        let item = item.trim();
        match item.split_once(" (") {
            Some((name, rest)) if rest.ends_with(')') => {
                names.push(name.to_string());
                let what = rest[..rest.len() - 1].to_string();
                events.push((std::mem::take(&mut names), what));
            }
            _ => names.push(item.to_string()),
        }
    }
    if !names.is_empty() {
        events.push((names, String::new()));
    }
    events
}

/// Text made safe for one cell of a Markdown table: `|` escaped, line breaks as spaces.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `` `s` `` as a table cell (a code span; `|` escaped all the same, as GitHub and mdBook
/// tables need).
fn code(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("`{}`", cell(s))
    }
}

/// A Markdown table: the header row, its rule and the rows (each cell already escaped).
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = format!("| {} |\n", header.join(" | "));
    t += &format!("|{}\n", "---|".repeat(header.len()));
    for r in rows {
        t += &format!("| {} |\n", r.join(" | "));
    }
    t
}

/// `list --markdown`: the reference page.
///
/// # Errors
/// When a sample run for the JSON shapes cannot be started or prints no JSON.
pub fn markdown(s: &Sources) -> Result<String, String> {
    let program = s.program;
    let mut t = format!(
        "<!-- generated by `{program} list --markdown`; do not edit -->\n\n# Reference\n\n\
         Generated from the code by `{program} list --markdown`, from the same registries \
         `{program} list` and `{program} list --json` print, so it cannot drift from them; \
         `cargo test -p locksim-cli --test reference` fails when this page is out of date.\n\n"
    );
    let mut body = algorithms_md(s);
    body += &settings_md(
        "Workload settings",
        "`--set key=value` for any algorithm, or the file's workload section; durations need a \
         unit (`500ms`, `2s`).",
        crate::setup::WORKLOAD_KNOBS,
    );
    body += &settings_md(
        "Fault-shape settings",
        "`--set key=value`, or `--vary` in a sweep; unset, they scale with the TTL.",
        crate::faultgen::FAULT_KNOBS,
    );
    body += &settings_md(
        "Per-client settings",
        "`--set cN.key=value`, or a `[client.cN]` table in a campaign file.",
        CLIENT_FIELDS,
    );
    body += &fault_kinds_md();
    body += &fault_types_md();
    body += &triggers_md();
    body += &properties_md();
    body += &exit_codes_md();
    body += &real_clients_md(s);
    body += &json_shapes_md(s)?;
    for title in body.lines().filter_map(|l| l.strip_prefix("## ")) {
        t += &format!("- [{title}](#{})\n", anchor(title));
    }
    Ok(t + "\n" + &body)
}

/// The anchor GitHub and mdBook give a heading: lower case, blanks as `-`, other
/// punctuation dropped.
fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn algorithms_md(s: &Sources) -> String {
    let mut t = String::from(
        "## Algorithms\n\n`--algo NAME` on the command line, `algorithm = \"NAME\"` in a file; \
         each algorithm's settings are given with `--set key=value`.\n\n",
    );
    let rows: Vec<Vec<String>> = locksim_algos::algorithms()
        .iter()
        .map(|(name, what)| vec![format!("[`{name}`](#{name})"), cell(what)])
        .collect();
    t += &table(&["algorithm", "what it is"], &rows);
    for (name, what) in locksim_algos::algorithms() {
        t += &format!("\n### {name}\n\n{}\n", what.trim());
        let knobs = locksim_algos::knobs(name).unwrap_or(&[]);
        if knobs.is_empty() {
            t += "\nNo settings of its own.\n";
        } else {
            let rows: Vec<Vec<String>> = knobs
                .iter()
                .map(|k| {
                    let help = match (s.real_note)(name, k.key) {
                        Some(r) => format!("{} *Real mode: {r}.*", k.help),
                        None => k.help.to_string(),
                    };
                    vec![code(k.key), code(k.default), cell(&help)]
                })
                .collect();
            t += "\n";
            t += &table(&["setting", "default", "what it does"], &rows);
        }
        let defaults = locksim_algos::client_defaults(name);
        if !defaults.is_empty() {
            t += &format!(
                "\nWorkload settings whose default `{name}` takes from its client library (a \
                 value given in the file or with `--set` wins):\n\n"
            );
            let rows: Vec<Vec<String>> = defaults
                .iter()
                .map(|d| vec![code(d.key), code(&client_default_value(d)), cell(d.source)])
                .collect();
            t += &table(&["setting", "default", "source"], &rows);
        }
    }
    t + "\n"
}

fn settings_md(title: &str, intro: &str, rows: &[(&str, &str)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(k, help)| vec![code(k), cell(help)])
        .collect();
    format!(
        "## {title}\n\n{intro}\n\n{}\n",
        table(&["setting", "what it does"], &rows)
    )
}

fn fault_kinds_md() -> String {
    let yes = |b: bool| if b { "yes" } else { "" }.to_string();
    let rows: Vec<Vec<String>> = FaultKind::ALL
        .iter()
        .map(|k| {
            vec![
                code(k.name()),
                yes(FaultKind::DEFAULT_MATRIX.contains(k)),
                yes(FaultKind::BASE.contains(k)),
            ]
        })
        .collect();
    format!(
        "## Fault kinds\n\n`--faults KIND[,KIND]`, or `faults = [...]` in a campaign file: each \
         seed draws a fault plan of these kinds. The base kinds draw faults themselves; \
         `mixed` and `swarm` combine them.\n\n{}\n",
        table(&["kind", "in the default matrix", "base kind"], &rows)
    )
}

fn fault_types_md() -> String {
    let rows: Vec<Vec<String>> = FAULT_TYPES
        .iter()
        .map(|(name, fields, help)| {
            let fields: Vec<String> = fields_of(fields).into_iter().map(code).collect();
            vec![code(name), fields.join(", "), cell(help)]
        })
        .collect();
    format!(
        "## Fault types\n\n{}\n\n{}\n",
        FAULT_ENTRY.join(" "),
        table(&["type", "fields", "what it does"], &rows)
    )
}

fn triggers_md() -> String {
    let fields: Vec<Vec<String>> = trigger_fields()
        .into_iter()
        .map(|(k, help)| vec![code(k), cell(help)])
        .collect();
    let events: Vec<Vec<String>> = trigger_events()
        .into_iter()
        .map(|(names, what)| {
            let names: Vec<String> = names.iter().map(|n| code(n)).collect();
            vec![names.join(", "), cell(&what)]
        })
        .collect();
    format!(
        "## Triggers and events\n\n`after = {{ {TRIGGER_FIELDS} }}` in place of `at` aims a \
         `[[fault]]` at an event (simulator only). {TRIGGER_NEVER_FIRED}\n\n{}\n\
         Events (`a|b c|d` means any of `a` or `b` followed by any of `c` or `d`: \
         `acquire ok`, `write invoke`):\n\n{}\n",
        table(&["field", "meaning"], &fields),
        table(&["event", "what it is"], &events)
    )
}

fn properties_md() -> String {
    let rows: Vec<Vec<String>> = Property::ALL
        .iter()
        .map(|p| {
            let kind = if p.is_liveness() {
                "liveness"
            } else {
                "safety"
            };
            vec![format!("**{p}**"), kind.to_string(), cell(meaning(*p))]
        })
        .collect();
    format!(
        "## Properties\n\nEvery run is checked for the safety properties; the liveness \
         properties are judged too, and campaign tables show them when a seed violates one, \
         when a campaign file names one, or with `--check liveness`.\n\n{}\n",
        table(&["property", "kind", "meaning"], &rows)
    )
}

fn exit_codes_md() -> String {
    let rows: Vec<Vec<String>> = crate::exit::TABLE
        .iter()
        .map(|c| {
            vec![
                c.code.to_string(),
                code(c.name),
                cell(c.meaning),
                cell(c.examples),
            ]
        })
        .collect();
    format!(
        "## Exit codes\n\nThe same for every command. When several apply, 1 wins over 3, and \
         `check` and `replay` report 2 for an unreadable file before anything else.\n\n{}\n",
        table(&["code", "name", "meaning", "e.g."], &rows)
    )
}

fn real_clients_md(s: &Sources) -> String {
    let rows: Vec<Vec<String>> = s
        .clients
        .iter()
        .map(|a| {
            let algos: Vec<String> = a.algorithms.iter().map(|x| code(x)).collect();
            vec![
                code(a.name),
                cell(a.library),
                code(&format!("{}=={}", a.package, a.version)),
                a.language.to_string(),
                algos.join(", "),
            ]
        })
        .collect();
    format!(
        "## Real-mode clients\n\n{}\n\n{}\n",
        REAL_CLIENTS.join(" "),
        table(
            &[
                "client",
                "library",
                "package",
                "language",
                "on the servers of"
            ],
            &rows
        )
    )
}

/// The JSON type of `v`, for the shapes: `array of objects`, `string`, ...
fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Object(_) => "object".into(),
        Value::Array(a) => match a.first() {
            None => "array".into(),
            Some(first) => format!("array of {}s", json_type(first)),
        },
    }
}

/// The keys of an object, or of an array's first element when that is an object.
fn inner_keys(v: &Value) -> String {
    let obj = match v {
        Value::Object(o) => Some(o),
        Value::Array(a) => a.first().and_then(Value::as_object),
        _ => None,
    };
    obj.map(|o| o.keys().map(|k| code(k)).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// A table of `v`'s keys, each with its JSON type and the keys one level in, or for a key of
/// `see` the text given there (a table of its own is elsewhere).
fn shape(v: &Value, see: &[(&str, &str)]) -> String {
    let rows: Vec<Vec<String>> = v
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let inside = match see.iter().find(|s| s.0 == k) {
                Some((_, text)) => text.to_string(),
                None => inner_keys(v),
            };
            vec![code(k), json_type(v), inside]
        })
        .collect();
    table(&["key", "type in the sample", "keys inside"], &rows)
}

/// The sample campaign file for `campaign FILE --json`'s shape.
const SAMPLE_FILE: &str = "name = \"sample\"\nalgorithm = \"central\"\nfaults = [\"none\"]\n\
                           seeds = 1\nexpect = \"safe\"\n";

fn json_shapes_md(s: &Sources) -> Result<String, String> {
    let program = s.program;
    let mut t = String::from(
        "## JSON shapes\n\nRead from sample runs of this program as `list --markdown` prints \
         this page: each command's top-level keys, the JSON type each had in the sample and, \
         for objects (and arrays of objects), their keys. Keys the sample did not print (an \
         optional one left out when empty) are not here; each command's `--help` names them.\n\n",
    );
    let run = [
        "run", "--algo", "central", "--seed", "0", "--faults", "none", "--json",
    ];
    t += &format!(
        "### run --json\n\n`{program} {}`\n\n{}\n",
        run.join(" "),
        shape(&(s.sample)(&run)?, &[])
    );
    let matrix = [
        "campaign", "--algo", "central", "--faults", "none", "--seeds", "1", "--json",
    ];
    let cells = (s.sample)(&matrix)?;
    t += &format!(
        "### campaign --json\n\nThe matrix, `{program} {}`:\n\n{}\n",
        matrix.join(" "),
        shape(&cells, &[("cells", "below")])
    );
    if let Some(first) = cells["cells"].get(0) {
        t += &format!(
            "Each cell of `cells`, one per algorithm and fault kind:\n\n{}\n",
            shape(first, &[])
        );
    }
    let dir = std::env::temp_dir().join(format!("locksim-reference-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("list --markdown: {}: {e}", dir.display()))?;
    let file = dir.join("sample.toml");
    let files = std::fs::write(&file, SAMPLE_FILE)
        .map_err(|e| format!("list --markdown: {}: {e}", file.display()))
        .and_then(|()| {
            let f = file.to_string_lossy();
            (s.sample)(&["campaign", &f, "--json"])
        });
    let _ = std::fs::remove_dir_all(&dir);
    let files = files?;
    t += &format!(
        "Campaign files, `{program} campaign FILE.toml --json` (a file with `name`, \
         `algorithm`, `faults`, `seeds` and `expect`):\n\n{}\n",
        shape(&files, &[("campaigns", "below")])
    );
    if let Some(first) = files["campaigns"].get(0) {
        t += &format!(
            "Each entry of `campaigns`, one per file:\n\n{}\n",
            shape(first, &[("cells", "each as a cell above")])
        );
    }
    t += &format!(
        "### list --json\n\n`{program} list --json`, the data of this page:\n\n{}",
        shape(&json(s), &[])
    );
    Ok(t)
}

/// `--help`'s long text: `head`, the properties ([`PROPERTY_MEANINGS`], safety then
/// liveness), `middle`, the exit codes ([`crate::exit::TABLE`]) and `tail`, the tables'
/// lines filled to at most [`HELP_WIDTH`] characters.
pub fn long_help(head: &str, middle: &str, tail: &str) -> String {
    let mut t = String::from(head);
    t += "\nFour safety properties are checked on every run:\n";
    for (p, m) in PROPERTY_MEANINGS.iter().filter(|p| !p.0.is_liveness()) {
        t += &wrap(&format!("  {p}  "), "      ", m);
    }
    t += "and three liveness properties:\n";
    for (p, m) in PROPERTY_MEANINGS.iter().filter(|p| p.0.is_liveness()) {
        t += &wrap(&format!("  {p}  "), "      ", m);
    }
    t += middle;
    t += "Exit codes, the same for every command:\n";
    for c in crate::exit::TABLE {
        t += &wrap(&format!("  {}  ", c.code), "     ", c.meaning);
    }
    t + tail
}

/// `text` filled into lines of at most [`HELP_WIDTH`] characters, the first after `first`,
/// the others after `rest`; a word longer than a line has one to itself, and a `+` or `-`
/// between blanks stays with the words either side (`ttl + lock delay` breaks only before
/// `ttl` or after `lock`). Ends with a newline.
pub fn wrap(first: &str, rest: &str, text: &str) -> String {
    let mut units: Vec<String> = Vec::new();
    let mut glue = false;
    for word in text.split_whitespace() {
        let operator = word == "+" || word == "-";
        match units.last_mut() {
            Some(last) if glue || operator => {
                last.push(' ');
                last.push_str(word);
            }
            _ => units.push(word.to_string()),
        }
        glue = operator;
    }
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for unit in units {
        if !empty && line.chars().count() + 1 + unit.chars().count() > HELP_WIDTH {
            out += &line;
            out += "\n";
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += &unit;
        empty = false;
    }
    out + &line + "\n"
}

/// The widest line [`wrap`] makes.
pub const HELP_WIDTH: usize = 92;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trigger_field_has_help() {
        for (k, help) in trigger_fields() {
            assert!(!help.is_empty(), "trigger field `{k}` has no help");
        }
    }

    #[test]
    fn trigger_events_split_into_names_and_meanings() {
        let ev = trigger_events();
        assert!(ev.len() >= 6, "{ev:?}");
        assert!(ev[0].0[0].starts_with("acquire|release"), "{ev:?}");
        assert!(ev.iter().any(|e| e.0 == ["grants"] && !e.1.is_empty()));
        assert!(ev.iter().any(|e| e.0 == ["accepts write", "rejects write"]));
        for (names, what) in &ev {
            assert!(!what.is_empty(), "{names:?} has no explanation");
            assert!(names.iter().all(|n| !n.contains('(')), "{ev:?}");
        }
    }

    #[test]
    fn every_property_has_a_meaning() {
        for p in Property::ALL {
            assert!(!meaning(p).is_empty(), "{p}");
        }
    }

    #[test]
    fn cells_escape_pipes_and_line_breaks() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(code("x|y"), "`x\\|y`");
        let t = table(&["a", "b"], &[vec!["1".into(), "2".into()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }
}
