//! The lines of a scenario file's `[settings]` keys and `[client.cN]` tables, so that an error
//! about one of them says where it is, as the errors of `[[fault]]` entries do
//! (`line 12: `ttl`: `abc` is not a duration`).
//!
//! The errors themselves come from the settings and client parsers, which know nothing of
//! files; they name the key they are about in backticks first (`` `ttl`: … ``, `` `bogus` is
//! not a setting ``) and a client as `client.c2:` or `client c2:`. That naming is what this
//! module reads: a message that names no key of the file is left without a line.

use std::collections::BTreeMap;

use locksim_core::text::LineIndex;

/// `[settings]` as read with the position of each value.
pub(crate) type SpannedSettings = BTreeMap<String, toml::Spanned<toml::Value>>;

/// `[client.cN]` tables as read with the position of each table and of each value.
pub(crate) type SpannedClients =
    BTreeMap<String, toml::Spanned<BTreeMap<String, toml::Spanned<toml::Value>>>>;

/// 1-based lines of every `[settings]` key and `[client.*]` table and key of one file.
#[derive(Debug, Default)]
pub(crate) struct KeyLines {
    settings: BTreeMap<String, usize>,
    clients: BTreeMap<String, (usize, BTreeMap<String, usize>)>,
}

impl KeyLines {
    /// The lines of `settings` and `clients`, read from `text` (the whole file).
    pub(crate) fn new(
        text: &str,
        settings: &SpannedSettings,
        clients: &SpannedClients,
    ) -> KeyLines {
        let lines = LineIndex::new(text);
        KeyLines {
            settings: settings
                .iter()
                .map(|(k, v)| (k.clone(), lines.line(v.span().start)))
                .collect(),
            clients: clients
                .iter()
                .map(|(name, table)| {
                    let keys = table
                        .get_ref()
                        .iter()
                        .map(|(k, v)| (k.clone(), lines.line(v.span().start)))
                        .collect();
                    (name.clone(), (lines.line(table.span().start), keys))
                })
                .collect(),
        }
    }

    /// `error` about the `[settings]` table, with `line L: ` in front when it names one of the
    /// file's settings (the first it names).
    pub(crate) fn settings_error(&self, error: &str) -> String {
        match quoted(error).find_map(|k| self.settings.get(k)) {
            Some(line) => format!("line {line}: {error}"),
            None => error.to_string(),
        }
    }

    /// `error` about a `[client.cN]` table, with the line of the key it names or else of the
    /// table in front.
    pub(crate) fn client_error(&self, error: &str) -> String {
        let Some((table, keys)) = client_named(error).and_then(|c| self.clients.get(c)) else {
            return error.to_string();
        };
        let line = quoted(error).find_map(|k| keys.get(k)).unwrap_or(table);
        format!("line {line}: {error}")
    }
}

/// The keys an error puts in backticks, in order: a word in backticks, or the key of a
/// `` `key=value` `` pair (as the algorithms' knob errors name a bad value).
fn quoted(error: &str) -> impl Iterator<Item = &str> {
    error
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|w| w.split_once('=').map_or(w, |(k, _)| k.trim()))
}

/// The client an error is about: `client.c2: …`, `client c2: …`, `client "x": …`.
fn client_named(error: &str) -> Option<&str> {
    let rest = error
        .strip_prefix("client.")
        .or_else(|| error.strip_prefix("client "))?;
    let name = rest.split(':').next()?;
    Some(name.trim().trim_matches('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        settings: SpannedSettings,
        #[serde(default)]
        client: SpannedClients,
    }

    fn lines(text: &str) -> KeyLines {
        let f: File = toml::from_str(text).unwrap();
        KeyLines::new(text, &f.settings, &f.client)
    }

    const TEXT: &str = "[settings]\nclients = 3\nttl = \"abc\"\n\n[client.c2]\nwork_min = \"1s\"\nttl = \"zz\"\n\n[client.c9]\nttl = \"1s\"\n";

    #[test]
    fn a_settings_error_gets_the_line_of_the_key_it_names_first() {
        let l = lines(TEXT);
        assert_eq!(
            l.settings_error("`ttl`: `abc` is not a duration"),
            "line 3: `ttl`: `abc` is not a duration"
        );
        assert_eq!(
            l.settings_error("`clients` is above `ttl`"),
            "line 2: `clients` is above `ttl`"
        );
        // An algorithm's knob error names the key with its value.
        assert_eq!(
            l.settings_error("raft-lease: `clients=abc` must be an integer from 1 to 9"),
            "line 2: raft-lease: `clients=abc` must be an integer from 1 to 9"
        );
        // A key the file does not have: no line rather than a wrong one.
        assert_eq!(l.settings_error("`keys`: too many"), "`keys`: too many");
    }

    #[test]
    fn a_client_error_gets_the_line_of_its_key_or_of_its_table() {
        let l = lines(TEXT);
        assert_eq!(
            l.client_error("client.c2: `ttl`: `zz` is not a duration"),
            "line 7: client.c2: `ttl`: `zz` is not a duration"
        );
        assert_eq!(
            l.client_error("client c9: there is no such client"),
            "line 9: client c9: there is no such client"
        );
        assert_eq!(
            l.client_error("client c4: there is no such client"),
            "client c4: there is no such client"
        );
    }
}

/// Where a TOML error of `text` is, as its message's prefix: `line N: ` and, when that line
/// sets a key (`seeds = "ten"`), the key too (`` line N: `seeds`: ``), so that a type error
/// names the field as well as the line. Empty when the error has no position.
pub(crate) fn toml_error_at(text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else {
        return String::new();
    };
    let start = span.start.min(text.len());
    let line = text[..start].matches('\n').count() + 1;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_text = text[line_start..].lines().next().unwrap_or("");
    // The key of a `key = value` line, when the error points into that value (not at the
    // whole file, as a missing field does, nor into a value begun on an earlier line).
    let key = line_text
        .split_once('=')
        .filter(|(k, _)| start > line_start + k.len())
        .map(|(k, _)| k.trim())
        .filter(|k| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        });
    match key {
        Some(k) => format!("line {line}: `{k}`: "),
        None => format!("line {line}: "),
    }
}

#[cfg(test)]
mod error_at_tests {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Seeds {
        seeds: u64,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Vary {
        vary: Vec<String>,
    }

    #[test]
    fn a_type_error_names_its_line_and_key() {
        let typed = "name = 1\nseeds = \"ten\"\n";
        let e = toml::from_str::<Seeds>(typed).unwrap_err();
        assert_eq!(super::toml_error_at(typed, &e), "line 2: `seeds`: ");
        // A missing field points at the whole file: no key.
        let e = toml::from_str::<Seeds>("name = 1\n").unwrap_err();
        assert!(!super::toml_error_at("name = 1\n", &e).contains('`'));
        // A bad element of a multi-line array is not the key of a string inside it.
        let arr = "seeds = 1\nvary = [\n  \"a=b\", 7,\n]\n";
        let e = toml::from_str::<Vary>(arr).unwrap_err();
        let at = super::toml_error_at(arr, &e);
        assert!(at.starts_with("line ") && !at.contains('`'), "{at}");
        // A syntax error names its line only.
        let broken = "[settings\nseeds = 1\n";
        let e = toml::from_str::<toml::Table>(broken).unwrap_err();
        assert_eq!(super::toml_error_at(broken, &e), "line 1: ");
    }
}
