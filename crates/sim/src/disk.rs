//! A simulated disk per node: writes are buffered until `fsync`; a crash loses what was not
//! fsynced; what was fsynced survives restarts (docs/design.md §4, after TigerBeetle's `storage.zig`).

use std::collections::BTreeMap;

/// One node's disk: named files of bytes.
#[derive(Debug, Default, Clone)]
pub struct Disk {
    durable: BTreeMap<String, Vec<u8>>,
    /// `None` marks a buffered delete.
    buffered: BTreeMap<String, Option<Vec<u8>>>,
    fsyncs: u64,
}

impl Disk {
    /// Writes `data` to `file` (buffered until [`Disk::fsync`]).
    pub fn write(&mut self, file: &str, data: Vec<u8>) {
        self.buffered.insert(file.to_string(), Some(data));
    }
    /// Deletes `file` (buffered until [`Disk::fsync`]).
    pub fn remove(&mut self, file: &str) {
        self.buffered.insert(file.to_string(), None);
    }
    /// Reads `file` as the running process sees it (buffered writes included).
    pub fn read(&self, file: &str) -> Option<&[u8]> {
        match self.buffered.get(file) {
            Some(Some(d)) => Some(d),
            Some(None) => None,
            None => self.durable.get(file).map(Vec::as_slice),
        }
    }
    /// Names of the files whose name starts with `prefix`, as the running process sees them,
    /// in name order.
    pub fn list(&self, prefix: &str) -> Vec<String> {
        let mut names: std::collections::BTreeSet<&String> = self
            .durable
            .keys()
            .filter(|f| f.starts_with(prefix))
            .collect();
        for (f, d) in &self.buffered {
            if f.starts_with(prefix) {
                if d.is_some() {
                    names.insert(f);
                } else {
                    names.remove(f);
                }
            }
        }
        names.into_iter().cloned().collect()
    }
    /// Makes every buffered write durable.
    pub fn fsync(&mut self) {
        for (f, d) in std::mem::take(&mut self.buffered) {
            match d {
                Some(d) => self.durable.insert(f, d),
                None => self.durable.remove(&f),
            };
        }
        self.fsyncs += 1;
    }
    /// Power loss: buffered writes vanish.
    pub fn crash(&mut self) {
        self.buffered.clear();
    }
    /// Number of fsyncs so far.
    pub fn fsyncs(&self) -> u64 {
        self.fsyncs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_loses_unsynced_writes() {
        let mut d = Disk::default();
        d.write("a", b"1".to_vec());
        d.fsync();
        d.write("a", b"2".to_vec());
        d.write("b", b"3".to_vec());
        assert_eq!(d.read("a"), Some(&b"2"[..]));
        d.crash();
        assert_eq!(d.read("a"), Some(&b"1"[..]));
        assert_eq!(d.read("b"), None);
        d.write("b", b"4".to_vec());
        assert_eq!(d.list(""), ["a", "b"]);
        d.remove("a");
        assert_eq!(d.list("a"), Vec::<String>::new());
        d.fsync();
        d.crash();
        assert_eq!(d.read("a"), None);
    }
}
