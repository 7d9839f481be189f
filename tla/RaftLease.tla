----------------------------- MODULE RaftLease -----------------------------
(***************************************************************************)
(* An abstract etcd-style lock on a Raft-replicated key-value store with  *)
(* leases (etcd documentation: "Interacting with etcd" on leases and      *)
(* revisions, the concurrency package's Mutex; Ongaro and Ousterhout,     *)
(* "In Search of an Understandable Consensus Algorithm", 2014).  It       *)
(* follows the description of locksim's `raft-lease` algorithm, not its  *)
(* code:                                                                   *)
(*  - the replicated state changes only through committed log entries,   *)
(*    applied in log order by every replica; the store's revision counts  *)
(*    them.  Committed entries survive leader changes (Raft's Leader      *)
(*    Completeness), so a new leader applies the same state.  The model   *)
(*    keeps the applied state (keys, leases) and the log's length `rev`   *)
(*    rather than the entries themselves, which no property reads (with   *)
(*    the entries, the models would be far too large);                    *)
(*  - a client's session is a lease with a TTL; the leader decides expiry *)
(*    on its own clock and then revokes the lease, which deletes the keys *)
(*    attached to it; a new leader refreshes every lease (gives it a full *)
(*    TTL on its own clock), as etcd does;                                 *)
(*  - to lock, a client puts its own key under the lock prefix, attached  *)
(*    to its lease: the key's create revision is its place in the queue;  *)
(*    the owner is the client whose key has the lowest create revision;   *)
(*    a waiter is told "acquired" when every key created before its own   *)
(*    is gone;                                                            *)
(*  - the fencing token is the lock key's revision;                        *)
(*  - release deletes the client's key only if its revision matches.      *)
(* Clients keep their leases alive in the background while they run (a   *)
(* keepalive each tick); a paused client sends none.  As etcd's Mutex,    *)
(* a client trusts its lock until it releases it: no local deadline.      *)
(*                                                                         *)
(* Bug toggles of the implementation:                                      *)
(*  - GrantOnExpiredLease (case K2): a waiter is told "acquired" when the *)
(*    keys before its own are gone, without checking that its own lease   *)
(*    is alive and its key (deleted with the lease) still exists;         *)
(*  - UnlockByName (case K3): release deletes the client's key whatever   *)
(*    its revision, so a retried (duplicated) release of an old handle    *)
(*    deletes the key of the client's next acquisition.                   *)
(***************************************************************************)
EXTENDS LeaseClients

CONSTANTS
    LeaderChanges,        \* BOOLEAN: the nemesis may force a leader change
    PauseOnlyWaiters,     \* BOOLEAN: pauses hit only clients waiting in the queue
    Retries,              \* BOOLEAN: a release may be delivered again later (a retry after a lost reply)
    GrantOnExpiredLease,  \* BOOLEAN: bug K2
    UnlockByName          \* BOOLEAN: bug K3

VARIABLES
    leader,   \* the current leader
    rev,      \* length of the committed log = the store's revision
    key,      \* key[c]: create revision of c's lock key (0: none), the state machine's state
    lease,    \* lease[c]: expiry of c's lease on the leader's clock (-1: none)
    myRev,    \* myRev[c]: the revision of the key c created for its current acquire
    retry     \* retry[c]: revision of an old release that may be delivered again (0: none)

rlVars == <<leader, rev, key, lease, myRev, retry>>
vars == <<baseVars, rlVars>>

NoDeadline == MaxTime + TTL + 1     \* beyond every clock reading of the model
LeaderNow == ServerNow(leader)
Rev == rev

Init ==
    /\ BaseInit
    /\ leader \in Servers
    /\ rev = 0
    /\ key = [c \in Clients |-> 0]
    /\ lease = [c \in Clients |-> -1]
    /\ myRev = [c \in Clients |-> 0]
    /\ retry = [c \in Clients |-> 0]

\* c's key is first in the queue: no other key was created before it.
First(c, r) == \A d \in Clients \ {c} : key[d] = 0 \/ key[d] > r

-----------------------------------------------------------------------------
(* Lock *)

\* Lease grant (if the session has none) and the put of c's key, committed.
Acquire(c) ==
    /\ BeginAcquire(c)
    /\ lease' = [lease EXCEPT ![c] = IF @ = -1 THEN LeaderNow + TTL ELSE @]
    /\ rev' = rev + 1                       \* log entry: put c's key
    /\ key' = [key EXCEPT ![c] = Rev + 1]
    /\ myRev' = [myRev EXCEPT ![c] = Rev + 1]
    /\ UNCHANGED <<leader, retry>>

\* The service tells c it holds the lock (at once, or when the keys before
\* its own are gone), after checking that c's key and lease are still
\* there (the leader's clock says the lease has not expired, even if the
\* revocation is not yet committed); the token is its key's revision.
AcqOk(c) ==
    /\ pc[c] = "acquiring" /\ ~paused[c]
    /\ First(c, myRev[c])
    /\ GrantOnExpiredLease \/ (key[c] = myRev[c] /\ LeaderNow < lease[c])
    /\ DecideAndHoldUntil(c, myRev[c], NoDeadline)
    /\ UNCHANGED rlVars

\* The leader sees c's lease expired on its clock and revokes it: c's key
\* goes with it.
Revoke(c) ==
    /\ lease[c] # -1 /\ LeaderNow >= lease[c]
    /\ lease' = [lease EXCEPT ![c] = -1]
    /\ rev' = rev + 1                       \* log entry: revoke c's lease
    /\ key' = [key EXCEPT ![c] = 0]
    /\ UNCHANGED <<baseVars, leader, myRev, retry>>

\* Delete c's key if its revision is r (or whatever it is, with the bug).
DeleteKey(c, r) ==
    /\ rev' = rev + 1                       \* log entry: delete c's key (if r)
    /\ key' = [key EXCEPT ![c] = IF UnlockByName \/ @ = r THEN 0 ELSE @]

Release(c) ==
    /\ BeginRelease(c)
    /\ DeleteKey(c, token[c])
    /\ retry' = [retry EXCEPT ![c] = IF Retries THEN token[c] ELSE 0]
    /\ UNCHANGED <<leader, lease, myRev>>

RelOk(c) ==
    /\ pc[c] = "releasing" /\ ~paused[c]
    /\ BackToIdle(c)
    /\ UNCHANGED rlVars

\* The release of an old handle arrives again (its first reply was lost).
Retry(c) ==
    /\ retry[c] # 0 /\ faults < MaxFaults
    /\ DeleteKey(c, retry[c])
    /\ retry' = [retry EXCEPT ![c] = 0]
    /\ faults' = faults + 1
    /\ UNCHANGED <<now, off, paused, cliVars, resVars, leader, lease, myRev>>

-----------------------------------------------------------------------------
(* Time, keepalives, leader changes *)

\* Time passes; every running client's keepalive renews its lease.
TickKeepalive ==
    /\ Tick
    /\ lease' = [c \in Clients |->
                   IF lease[c] # -1 /\ ~paused[c] /\ LeaderNow < lease[c]
                   THEN now' + SOff(leader) + TTL ELSE lease[c]]
    /\ UNCHANGED <<leader, rev, key, myRev, retry>>

\* A new leader is elected (a majority of replicas is assumed to vote); it
\* has the whole committed log and gives every lease a full TTL on its
\* own clock.
LeaderChange ==
    /\ LeaderChanges /\ faults < MaxFaults
    /\ \E s \in Servers \ {leader} :
          /\ leader' = s
          /\ lease' = [c \in Clients |-> IF lease[c] = -1 THEN -1 ELSE ServerNow(s) + TTL]
    /\ faults' = faults + 1
    /\ UNCHANGED <<now, off, paused, cliVars, resVars, rev, key, myRev, retry>>

PauseAllowed(c) == ~PauseOnlyWaiters \/ pc[c] = "acquiring"

-----------------------------------------------------------------------------
Next ==
    \/ TickKeepalive
    \/ LeaderChange
    \/ \E c \in Clients :
          \/ Acquire(c) \/ AcqOk(c) \/ Revoke(c) \/ Release(c) \/ RelOk(c) \/ Retry(c)
          \/ (ClientStep(c) \/ Resume(c) \/ (PauseAllowed(c) /\ Pause(c))) /\ UNCHANGED rlVars
    \/ \E n \in Nodes : Step(n) /\ UNCHANGED rlVars

Spec == Init /\ [][Next]_vars
=============================================================================
