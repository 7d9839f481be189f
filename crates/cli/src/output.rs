//! What every command prints through: stdout that tolerates a closed pipe, one-line errors
//! on stderr, and the program's name for the commands that messages suggest.

use std::sync::OnceLock;

static PROGRAM: OnceLock<String> = OnceLock::new();

/// The name this program was started as (the file name of its path; `locksim` when unknown),
/// for the commands that messages tell the user to run.
pub(crate) fn program() -> &'static str {
    PROGRAM.get().map_or("locksim", String::as_str)
}

/// Records the name this program was started as (once, from `main_with`).
pub(crate) fn set_program(name: String) {
    let _ = PROGRAM.set(name);
}

/// Writes to stdout, ignoring a closed pipe (`locksim run … | head` is not an error).
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|_| o.flush());
}

/// Prints an error for people: `error: ` and the message on one line (a value the message
/// echoes, a file name or a setting, may hold a newline; it is shown escaped, as `\n`).
pub(crate) fn error_line(msg: &str) {
    eprintln!("error: {}", locksim_core::text::one_line(msg));
}
