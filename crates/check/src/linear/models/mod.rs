//! Sequential specifications: a compare-and-set register (Jepsen's etcd histories), a
//! key-value store with get/put/append (Porcupine's kv histories), and a lease lock.

pub mod kv;
pub mod lock;
pub mod register;
