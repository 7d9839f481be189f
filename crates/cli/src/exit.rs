//! The exit codes: [`locksim_explore::exit`], the one table every command keeps.

pub use locksim_explore::exit::*;
