//! Network faults with nftables, on loopback, in a table of our own (`inet locksim_<pid>`):
//! every node has its own `127.0.0.N`, so a rule matches a link by source and destination
//! address. `drop` is a black hole (the sender waits for its timeout), `reject with tcp reset`
//! is `mode = "reset"` (the sender learns at once), `numgen random mod 100 < p drop` is loss.
//! The whole table is rewritten in one `nft -f` transaction at every change, and deleted at
//! the end of the run (also on failure and Ctrl-C: [`Table`]'s `Drop`).
//!
//! Processes that cannot bind their own address before they connect (etcd members dialling
//! each other: Go's etcd has no flag for it, so the kernel gives them `127.0.0.1`) run under
//! a user id of their own, and a source-NAT rule (`meta skuid U … snat to 127.0.0.N`) gives
//! their connections their node's address. A rule then sees such a link on the way in (the
//! `input` chain, which only looks at source-NATed connections, after the rewrite) and its
//! replies on the way out (the `output` chain, where they are addressed to the node's
//! address); every other packet is judged once, on the way out.

use std::io::Write;
use std::process::{Command, Stdio};

use locksim_core::fault::{CutMode, Fault};
use locksim_core::{Cluster, NodeId};

use crate::addr::ip;

/// The nftables rules of one network fault: `(from, to, action)` per directed link.
pub fn rules(fault: &Fault, cluster: &Cluster) -> Vec<String> {
    let all: Vec<NodeId> = (0..cluster.nodes()).collect();
    let cut = |mode: &CutMode| match mode {
        CutMode::Drop => "drop".to_string(),
        CutMode::Reset => "meta l4proto tcp reject with tcp reset".to_string(),
    };
    let mut links: Vec<(NodeId, NodeId, String)> = Vec::new();
    match fault {
        Fault::Partition { a, b, mode, .. } => {
            for &x in a {
                for &y in b {
                    links.push((x, y, cut(mode)));
                    links.push((y, x, cut(mode)));
                }
            }
        }
        Fault::PartitionOneway { from, to, mode, .. } => {
            for &x in from {
                for &y in to {
                    links.push((x, y, cut(mode)));
                }
            }
        }
        Fault::Isolate { node, mode, .. } => {
            for &y in all.iter().filter(|&&y| y != *node) {
                links.push((*node, y, cut(mode)));
                links.push((y, *node, cut(mode)));
            }
        }
        // `numgen random mod 100` is 0..=99: 100 % is a plain drop, 0 % no rule.
        Fault::Loss {
            from, to, rate_pct, ..
        } if *rate_pct > 0 => {
            let action = if *rate_pct >= 100 {
                "drop".to_string()
            } else {
                format!("numgen random mod 100 < {rate_pct} drop")
            };
            for &x in from {
                for &y in to {
                    links.push((x, y, action.clone()));
                }
            }
        }
        // The replies' data is dropped, nothing else: the servers' handshake answers, bare
        // ACKs and FINs pass, so the clients' requests are delivered, acknowledged and acted
        // on, and no answer reaches them (the simulator's `drop_replies` on its TCP model).
        // A data segment is one with PSH set (Linux sets it on the last segment of each
        // write) or longer than a bare ACK with timestamps (52 bytes); SYNs and RSTs pass.
        Fault::DropReplies {
            clients, servers, ..
        } => {
            for &s in servers {
                for &c in clients {
                    links.push((s, c, "tcp flags & psh == psh drop".to_string()));
                    links.push((
                        s,
                        c,
                        "tcp flags & (syn | rst) == 0 ip length > 52 drop".to_string(),
                    ));
                }
            }
        }
        _ => {}
    }
    links
        .into_iter()
        .filter(|(x, y, _)| x != y)
        .map(|(x, y, action)| format!("ip saddr {} ip daddr {} {action}", ip(x), ip(y)))
        .collect()
}

/// The nft script that replaces table `name` with an output-hook chain holding `rules` and,
/// when `snat` names processes (user id, node address) whose connections are source-NATed
/// to their node's address, the NAT chain and an input-hook chain holding `rules` again for
/// those connections only.
pub fn script(name: &str, rules: &[String], snat: &[(u32, std::net::Ipv4Addr)]) -> String {
    let mut s = format!(
        "table inet {name}\ndelete table inet {name}\ntable inet {name} {{\n  chain out {{\n    type filter hook output priority 0; policy accept;\n"
    );
    // A reset rule's own RST travels the reverse link, which the same cut rejects: let RSTs
    // through, or the sender would wait for its timeout as in a black hole.
    let resets = rules.iter().any(|r| r.contains("reject"));
    let chain = |s: &mut String, prefix: &str| {
        if resets {
            *s += "    tcp flags & rst == rst accept\n";
        }
        for r in rules {
            *s += &format!("    {prefix}{r}\n");
        }
    };
    chain(&mut s, "");
    s += "  }\n";
    if !snat.is_empty() {
        s += "  chain in {\n    type filter hook input priority 0; policy accept;\n";
        chain(&mut s, "ct status snat ");
        s += "  }\n  chain nat {\n    type nat hook postrouting priority srcnat; policy accept;\n";
        for (uid, addr) in snat {
            s += &format!(
                "    meta skuid {uid} ip saddr 127.0.0.1 ip daddr 127.0.0.0/8 snat ip to {addr}\n"
            );
        }
        s += "  }\n";
    }
    s += "}\n";
    s
}

fn nft(script: &str) -> Result<(), String> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run nft (install the nftables package): {e}"))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())
        .map_err(|e| format!("nft: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The pid in a table name of ours (`locksim_<pid>`) from a line of `nft list tables`.
pub fn stale_pid(line: &str) -> Option<u32> {
    line.trim()
        .strip_prefix("table inet locksim_")
        .and_then(|p| p.parse().ok())
}

/// Deletes the tables that harnesses killed by `SIGKILL` left behind (their pid is gone).
pub fn sweep_stale() {
    let Ok(out) = Command::new("nft").args(["list", "tables"]).output() else {
        return;
    };
    for pid in String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(stale_pid)
    {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = nft(&format!("delete table inet locksim_{pid}\n"));
        }
    }
}

/// The run's nftables table; deleted when dropped.
pub struct Table {
    name: String,
    created: bool,
    snat: Vec<(u32, std::net::Ipv4Addr)>,
}

impl Table {
    /// The table of this process (nothing is created until the first [`Table::set`]).
    pub fn new() -> Table {
        Table {
            name: format!("locksim_{}", std::process::id()),
            created: false,
            snat: Vec::new(),
        }
    }

    /// The table of this process, source-NATing the connections of each process running as
    /// user id `uid` to `addr` (see the module docs); created at once, before those processes
    /// start, so their first connections carry their address.
    ///
    /// # Errors
    /// When nft is missing or refuses the table (not root).
    pub fn with_snat(snat: Vec<(u32, std::net::Ipv4Addr)>) -> Result<Table, String> {
        let mut t = Table::new();
        t.snat = snat;
        t.created = true;
        nft(&script(&t.name, &[], &t.snat))?;
        Ok(t)
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Replaces every rule with `rules`, atomically.
    ///
    /// # Errors
    /// When nft is missing or refuses the rules.
    pub fn set(&mut self, rules: &[String]) -> Result<(), String> {
        if !self.created && rules.is_empty() {
            return Ok(());
        }
        self.created = true;
        nft(&script(&self.name, rules, &self.snat))
    }
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if self.created {
            let _ = nft(&format!(
                "table inet {0}\ndelete table inet {0}\n",
                self.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::time::SEC;

    #[test]
    fn each_fault_cuts_exactly_its_links() {
        let c = Cluster {
            servers: 1,
            clients: 2,
        };
        let p = Fault::Partition {
            a: vec![1],
            b: vec![0, 3],
            duration: SEC,
            mode: CutMode::Drop,
        };
        assert_eq!(
            rules(&p, &c),
            [
                "ip saddr 127.0.0.11 ip daddr 127.0.0.10 drop",
                "ip saddr 127.0.0.10 ip daddr 127.0.0.11 drop",
                "ip saddr 127.0.0.11 ip daddr 127.0.0.13 drop",
                "ip saddr 127.0.0.13 ip daddr 127.0.0.11 drop",
            ]
        );
        let iso = Fault::Isolate {
            node: 0,
            duration: SEC,
            mode: CutMode::Reset,
        };
        let r = rules(&iso, &c);
        assert_eq!(r.len(), 6, "{r:?}");
        assert!(r.iter().all(|l| l.ends_with("reject with tcp reset")));
        let loss = Fault::Loss {
            from: vec![2],
            to: vec![0],
            rate_pct: 30,
            duration: SEC,
        };
        assert_eq!(
            rules(&loss, &c),
            ["ip saddr 127.0.0.12 ip daddr 127.0.0.10 numgen random mod 100 < 30 drop"]
        );
        assert!(rules(&Fault::Heal, &c).is_empty());
        let all = Fault::Loss {
            from: vec![2],
            to: vec![0],
            rate_pct: 100,
            duration: SEC,
        };
        assert_eq!(
            rules(&all, &c),
            ["ip saddr 127.0.0.12 ip daddr 127.0.0.10 drop"]
        );
        let none = Fault::Loss {
            from: vec![2],
            to: vec![0],
            rate_pct: 0,
            duration: SEC,
        };
        assert!(rules(&none, &c).is_empty());
    }

    #[test]
    fn dropped_replies_are_the_servers_data_segments_only() {
        let c = Cluster {
            servers: 2,
            clients: 2,
        };
        let f = Fault::DropReplies {
            clients: vec![2],
            servers: vec![0, 1],
            duration: SEC,
        };
        let r = rules(&f, &c);
        assert_eq!(r.len(), 4, "{r:?}");
        for s in ["127.0.0.10", "127.0.0.11"] {
            let from = |rule: &str| format!("ip saddr {s} ip daddr 127.0.0.12 {rule}");
            assert!(r.contains(&from("tcp flags & psh == psh drop")), "{r:?}");
            assert!(
                r.contains(&from("tcp flags & (syn | rst) == 0 ip length > 52 drop")),
                "{r:?}"
            );
        }
        // Nothing from the client, so its requests (and its handshakes) get through.
        assert!(
            r.iter().all(|x| !x.starts_with("ip saddr 127.0.0.12")),
            "{r:?}"
        );
    }

    #[test]
    fn only_our_tables_count_as_stale() {
        assert_eq!(stale_pid("table inet locksim_4242"), Some(4242));
        assert_eq!(stale_pid("table inet filter"), None);
        assert_eq!(stale_pid("table ip locksim_1"), None);
    }

    #[test]
    fn the_script_replaces_the_table_in_one_transaction() {
        let s = script(
            "locksim_7",
            &["ip saddr 127.0.0.10 ip daddr 127.0.0.11 drop".into()],
            &[],
        );
        assert!(
            s.starts_with("table inet locksim_7\ndelete table inet locksim_7\n"),
            "{s}"
        );
        assert!(s.contains("hook output priority 0; policy accept;"));
        assert!(s.contains("    ip saddr 127.0.0.10 ip daddr 127.0.0.11 drop\n"));
        assert!(
            !s.contains("rst == rst"),
            "no reset rule, no RST exception: {s}"
        );
        let r = script(
            "t",
            &[
                "ip saddr 127.0.0.10 ip daddr 127.0.0.11 meta l4proto tcp reject with tcp reset"
                    .into(),
            ],
            &[],
        );
        let (exception, rule) = (
            r.find("rst == rst accept").unwrap(),
            r.find("reject").unwrap(),
        );
        assert!(exception < rule, "{r}");
        assert!(!r.contains("hook input") && !r.contains("snat"), "{r}");
        // NATed processes: their connections get the node's address, and the same rules see
        // them on the way in, for those connections only.
        let n = script(
            "t",
            &["ip saddr 127.0.0.10 ip daddr 127.0.0.11 drop".into()],
            &[(61_010, std::net::Ipv4Addr::new(127, 0, 0, 10))],
        );
        assert!(
            n.contains(
                "meta skuid 61010 ip saddr 127.0.0.1 ip daddr 127.0.0.0/8 snat ip to 127.0.0.10"
            ),
            "{n}"
        );
        assert!(n.contains("hook input priority 0"), "{n}");
        assert!(
            n.contains("    ct status snat ip saddr 127.0.0.10 ip daddr 127.0.0.11 drop\n"),
            "{n}"
        );
    }
}
