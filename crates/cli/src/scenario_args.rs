//! What `run`, `shrink`, `hunt` and `real` share: [`locksim_explore::choose`].

pub use locksim_explore::choose::{choose, Chosen};
