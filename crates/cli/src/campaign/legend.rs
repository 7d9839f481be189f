//! What a campaign table's columns mean: printed once after the tables (once per run, not
//! once per campaign file), left out with `--quiet`.

/// The legend of the tables above it; with the L1–L3 lines when a table showed those columns.
/// Starts with a blank line.
pub(super) fn legend(liveness: bool) -> String {
    let mut t = String::new();
    t += "\nEach column counts seeds (runs) that violate the property:\n";
    t += "S1 = a double grant: two clients held the lock at the same true time\n";
    t += "S2 = a stale write: the resource accepted a write from a grant after accepting one from a\n";
    t += "     grant the lock service made later\n";
    t +=
        "S3 = linearizability: the lock service's answers fit no correct lease lock (the service\n";
    t += "     itself misbehaved), or the resource's writes fit no register (a write took effect twice)\n";
    t +=
        "S4 = a release freed another grant's lock (a retried unlock deleting the next holder's)\n";
    if liveness {
        t += "L1 = a holder stopped (crashed, or stopped acting for good) and no waiting client got the\n";
        t += "     lock within ttl + lock delay + slack\n";
        t += "L2 = a healthy holder that renews lost its lock through an outage shorter than\n";
        t += "     ttl - renew_every (less the retry slack)\n";
        t += "L3 = a lock stayed taken longer than ttl + slack while no live client believed it held it\n";
    }
    t += "UNDECIDED = a check ran out of its budget on those seeds: they count as neither safe nor violated\n";
    t += "n/a = not judged: the property is not checked for this algorithm (L1 for a lock that never\n";
    t += "     expires), or the cell's faults never took effect (e.g. leader-change where no server\n";
    t += "     leads): it ran fault-free, so it is no evidence of surviving them. `none` is the control\n";
    t += "     group: no faults are meant, and its cells are judged as they are\n";
    t += "grants = successful acquires over all seeds (a cell with none would prove nothing;\n";
    t += "     `starved`: for more than half of the time clients waited for the lock, nobody held it)\n";
    t += "lock metrics (true time, over all seeds of the cell; percentiles within 1.6%): acquire =\n";
    t += "     latency of a granted acquire; wait = from a round's first attempt to its grant; hold =\n";
    t += "     length of a hold; failed/unknown = acquires answered fail / with no definite answer\n";
    t += "     (a timeout, a reset, or none by the end); expired = leases\n";
    t +=
        "     that ran out while the holder still acted on them; msgs = messages sent (dropped);\n";
    t += "     acq/s = acquire attempts per second of the whole run (the busiest 100 ms, per\n";
    t +=
        "     second); fair = Jain's index of a run's grants per client, the mean over the seeds\n";
    t += "     (1: even; 1/clients: one client got them all)\n";
    t
}
