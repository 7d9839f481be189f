--------------------------- MODULE LeaseClients ---------------------------
(***************************************************************************)
(* What every lease-lock specification here shares: true time, per-node  *)
(* clocks with steps, process pauses, the client's critical section, the  *)
(* fencing resource, and the safety properties S1 and S2 of docs/design.md §7.    *)
(* Central, Redlock and RaftLease extend this module with their lock      *)
(* service.                                                                *)
(*                                                                         *)
(* Time (docs/design.md §3).  `now` is true time in ticks, seen only by the       *)
(* properties.  Node n's wall clock reads now + off[n]; a clock step      *)
(* (NTP) changes off[n]; a monotonic clock reads `now` (no drift is       *)
(* modelled: the simulator's drift campaigns found nothing either).      *)
(* Protocol code reads only its own node's clock (ClientNow, ServerNow).  *)
(*                                                                         *)
(* A process pause (a GC, a VM migration) stops every step of one client  *)
(* while time, the other nodes and the network go on: a paused client    *)
(* takes no step, and the bound on its local work (below) is lifted.     *)
(*                                                                         *)
(* The client (crates/sim/src/workload.rs and holder.rs) loops: acquire;  *)
(* then for each write: check that its validity deadline is far enough    *)
(* (the careful client of Kleppmann's article), do local work, write to   *)
(* the resource with its fencing token; finally release. A protocol       *)
(* module may renew the lease meanwhile (RenewUntil moves the deadline).  *)
(* Without a pause, the write comes before the deadline: the check was    *)
(* `now + work < deadline` and the work lasted `work`. We model exactly   *)
(* that bound: time cannot pass the deadline (as it was at the check)     *)
(* while an unpaused client is between its check and its write.           *)
(*                                                                         *)
(* S1, MutualExclusion: a client *holds* from its acquire ok until the    *)
(* earliest of its release, its clock reaching its deadline, or giving up *)
(* -- but at least until the write it has committed to (docs/design.md §6).  No   *)
(* two clients hold at once.  S2, ResourceSafety: FencingResource, with   *)
(* grants ordered as the service decided them (Decide, below), never by   *)
(* the order in which the clients heard their acquire ok.                 *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Fencing,      \* BOOLEAN: grants carry fencing tokens that the resource checks
    Clients,      \* client processes, e.g. {"c1", "c2"}
    Servers,      \* lock-service nodes, e.g. {"n1"}
    TTL,          \* lease length asked for, ticks
    Drift,        \* the client's drift allowance, ticks: deadline = start + TTL - Drift
    WorkMin,      \* shortest local work before a write, ticks
    WorkMax,      \* longest local work before a write, ticks
    MaxDelay,     \* a write reaches the resource within this many ticks
    ClientWall,   \* BOOLEAN: clients measure validity on their wall clock (else monotonic)
    ServerWall,   \* BOOLEAN: servers judge expiry on their wall clock (Redis does)
    Pauses,       \* BOOLEAN: the nemesis may pause clients
    Steps,        \* BOOLEAN: the nemesis may step wall clocks
    StepSizes,    \* the clock steps it may make, ticks (negative: backwards)
    MaxFaults,    \* bound: faults injected in one behaviour
    MaxTime,      \* bound: true time stops here
    OwnerIds      \* owner values are <<c, n>> with n in 0..OwnerIds-1 (see Owner)

VARIABLES
    now,        \* true time, ticks
    off,        \* off[n]: node n's wall clock minus true time
    paused,     \* paused[c]: client c is paused
    faults,     \* number of faults injected so far
    pc,         \* pc[c]: where client c is in its loop (below)
    att,        \* att[c]: c's acquire attempts so far, modulo OwnerIds
    start,      \* start[c]: c's clock when its current acquire began
    deadline,   \* deadline[c]: the validity deadline of c's grant, on c's clock
    expired,    \* expired[c]: c's clock has reached deadline[c] since the grant
    decided,    \* decided[c]: the service has decided c's current grant (ghost, for S2)
    newer,      \* newer[c]: clients whose current grant the service decided after c's (ghost)
    stale,      \* stale[c]: a newer grant's write was accepted before c's (ghost)
    staleAcc,   \* the resource accepted a stale write: S2 is violated (ghost)
    highest,    \* the resource's highest accepted token (0: none)
    token,      \* token[c]: the fencing token of c's current grant (0: none)
    workEnd,    \* workEnd[c]: true time by which an unpaused c at work writes
    late,       \* late[c]: c was paused between its check and its write
    sentAt,     \* sentAt[c]: true time c sent its write
    ready       \* ready[c]: time has passed since c's last acquire began

(* Client states:
   idle       between rounds
   acquiring  inside acquire (the protocol module has sub-states)
   held       has a grant, not committed to a write
   work       validity checked, doing local work, will write
   writing    write sent, not yet processed by the resource
   written    accepted; the reply is on its way
   rejected   fenced; the reply is on its way
   fenced     learned its write was fenced
   lost       gave up the grant (check failed or fenced); will release
   releasing  inside release (sub-states in the protocol module)      *)

envVars == <<now, off, paused, faults>>
cliVars == <<pc, att, start, deadline, expired, token, workEnd, late, sentAt, ready>>
resVars == <<decided, newer, stale, staleAcc, highest>>
baseVars == <<envVars, cliVars, resVars>>

\* The resource's rule, from FencingResource.
R == INSTANCE FencingResource WITH grants <- 0, lastAcc <- 0, maxAcc <- 0, MaxGrants <- 0

Nodes == Clients \cup Servers

\* Clients with a grant they have not finished with.
Granted == {"held", "work", "writing", "written", "rejected", "fenced", "lost", "releasing"}

\* The owner value of c's current attempt (random in the implementation,
\* checked by release).  Trace validation distinguishes every attempt
\* (OwnerIds large); the models use OwnerIds = 1, i.e. the owner is the
\* client: this only lets a client's release delete an entry left by its
\* own earlier attempt, which nobody holds, and keeps the state space finite.
Owner(c) == <<c, att[c]>>
NoOwner == <<"none", 0>>

COff(c) == IF ClientWall THEN off[c] ELSE 0
SOff(s) == IF ServerWall THEN off[s] ELSE 0
ClientNow(c) == now + COff(c)
ServerNow(s) == now + SOff(s)

BaseInit ==
    /\ now = 0
    /\ off = [n \in Nodes |-> 0]
    /\ paused = [c \in Clients |-> FALSE]
    /\ faults = 0
    /\ pc = [c \in Clients |-> "idle"]
    /\ att = [c \in Clients |-> 0]
    /\ start = [c \in Clients |-> 0]
    /\ deadline = [c \in Clients |-> 0]
    /\ expired = [c \in Clients |-> TRUE]
    /\ token = [c \in Clients |-> 0]
    /\ workEnd = [c \in Clients |-> 0]
    /\ late = [c \in Clients |-> FALSE]
    /\ sentAt = [c \in Clients |-> 0]
    /\ ready = [c \in Clients |-> TRUE]
    /\ decided = [c \in Clients |-> FALSE]
    /\ newer = [c \in Clients |-> {}]
    /\ stale = [c \in Clients |-> FALSE]
    /\ staleAcc = FALSE
    /\ highest = 0

-----------------------------------------------------------------------------
(* Time and faults *)

\* True time moves to t.  An unpaused client between its validity check and
\* its write keeps time before its deadline (it writes first); a write in
\* flight reaches the resource within MaxDelay.
AdvanceTo(t) ==
    /\ now < t /\ t <= MaxTime
    /\ \A c \in Clients : (pc[c] = "work" /\ ~paused[c] /\ ~late[c]) => t < workEnd[c]
    /\ \A c \in Clients : pc[c] = "writing" => t <= sentAt[c] + MaxDelay
    /\ now' = t
    /\ expired' = [c \in Clients |-> expired[c] \/ t + COff(c) >= deadline[c]]
    /\ ready' = [c \in Clients |-> TRUE]
    /\ UNCHANGED <<off, paused, faults, pc, att, start, deadline, token,
                   workEnd, late, sentAt, resVars>>

Tick == AdvanceTo(now + 1)

\* The nemesis pauses client c (docs/design.md §4 `pause`): it stops until Resume.
Pause(c) ==
    /\ Pauses /\ faults < MaxFaults /\ ~paused[c]
    /\ paused' = [paused EXCEPT ![c] = TRUE]
    /\ late' = [late EXCEPT ![c] = @ \/ pc[c] = "work"]
    /\ faults' = faults + 1
    /\ UNCHANGED <<now, off, pc, att, start, deadline, expired, token,
                   workEnd, sentAt, ready, resVars>>

Resume(c) ==
    /\ paused[c]
    /\ paused' = [paused EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<now, off, faults, cliVars, resVars>>

\* Node n's wall clock steps by d (an NTP step).  A client whose clock
\* jumps past its deadline stops holding (its hold ends the first time its
\* clock reaches the deadline, as the S1 checker computes it).
ClockStep(n, d) ==
    /\ faults < MaxFaults
    /\ off' = [off EXCEPT ![n] = @ + d]
    /\ faults' = faults + 1
    /\ expired' = [c \in Clients |->
                      expired[c] \/ (ClientWall /\ c = n /\ now + off'[c] >= deadline[c])]
    /\ UNCHANGED <<now, paused, pc, att, start, deadline, token, workEnd,
                   late, sentAt, ready, resVars>>

Step(n) == Steps /\ \E d \in StepSizes : ClockStep(n, d)

-----------------------------------------------------------------------------
(* The client's critical section and the resource *)

\* Before each write: remaining validity must exceed the planned work
\* (workload.rs: `now + work < until`).  The client then writes within the
\* work, so before its deadline (in true time: deadline - COff(c)).
CheckValidity(c) ==
    /\ pc[c] = "held" /\ ~paused[c] /\ ~expired[c]
    /\ ClientNow(c) + WorkMin < deadline[c]
    /\ pc' = [pc EXCEPT ![c] = "work"]
    /\ workEnd' = [workEnd EXCEPT ![c] = deadline[c] - COff(c)]
    /\ late' = [late EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, sentAt, ready, resVars>>

\* The check failed (`now + work >= until` for the work it drew), or the
\* client learned its write was fenced: it stops acting and will release.
GiveUp(c) ==
    /\ ~paused[c]
    /\ \/ pc[c] = "fenced"
       \/ pc[c] = "held" /\ ClientNow(c) + WorkMax >= deadline[c]
    /\ pc' = [pc EXCEPT ![c] = "lost"]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd, late, sentAt, ready, resVars>>

WriteInvoke(c) ==
    /\ pc[c] = "work" /\ ~paused[c]
    /\ pc' = [pc EXCEPT ![c] = "writing"]
    /\ sentAt' = [sentAt EXCEPT ![c] = now]
    /\ workEnd' = [workEnd EXCEPT ![c] = 0]
    /\ late' = [late EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, ready, resVars>>

\* The resource processes c's write (FencingResource): it rejects a token
\* below the highest it accepted.  The ghosts record S2: accepting c's
\* write makes every older grant stale; accepting a stale write violates S2.
ResourceAccept(c) ==
    /\ pc[c] = "writing"
    /\ ~R!Fenced(token[c])
    /\ highest' = IF token[c] # 0 THEN token[c] ELSE highest
    /\ stale' = [d \in Clients |-> stale[d] \/ c \in newer[d]]
    /\ staleAcc' = (staleAcc \/ stale[c])
    /\ pc' = [pc EXCEPT ![c] = "written"]
    /\ sentAt' = [sentAt EXCEPT ![c] = 0]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd, late, ready,
                   decided, newer>>

ResourceReject(c) ==
    /\ pc[c] = "writing"
    /\ R!Fenced(token[c])
    /\ pc' = [pc EXCEPT ![c] = "rejected"]
    /\ sentAt' = [sentAt EXCEPT ![c] = 0]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd, late, ready, resVars>>

WriteOk(c) ==
    /\ pc[c] = "written" /\ ~paused[c]
    /\ pc' = [pc EXCEPT ![c] = "held"]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd, late, sentAt, ready, resVars>>

WriteFail(c) ==
    /\ pc[c] = "rejected" /\ ~paused[c]
    /\ pc' = [pc EXCEPT ![c] = "fenced"]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd, late, sentAt, ready, resVars>>

ClientStep(c) ==
    CheckValidity(c) \/ GiveUp(c) \/ WriteInvoke(c) \/ ResourceAccept(c)
    \/ ResourceReject(c) \/ WriteOk(c) \/ WriteFail(c)

-----------------------------------------------------------------------------
(* Pieces of acquire and release for the protocol modules.  Each leaves the
   protocol's own variables to the caller. *)

\* (A round takes time: a client starts at most one attempt per instant.
\* This keeps the models finite and is true of every recorded trace.)
BeginAcquire(c) ==
    /\ pc[c] = "idle" /\ ~paused[c] /\ ready[c]
    /\ ready' = [ready EXCEPT ![c] = FALSE]
    /\ pc' = [pc EXCEPT ![c] = "acquiring"]
    /\ att' = [att EXCEPT ![c] = (@ + 1) % OwnerIds]
    /\ start' = [start EXCEPT ![c] = ClientNow(c)]
    /\ UNCHANGED <<envVars, deadline, expired, token, workEnd, late, sentAt, resVars>>

\* The service decides c's grant (docs/design.md §7): S2's "later grant" is this
\* order, the true time the service decided (a single server granting; a
\* Redlock majority reached; a Raft leader telling c it holds), never the
\* moment c hears ok, since replies overtake each other.  Every client whose
\* grant the service had already decided now has a newer one; c's is the
\* newest.  (The ghost part of a server's grant step.)
Decide(c) ==
    /\ decided' = [decided EXCEPT ![c] = TRUE]
    /\ newer' = [d \in Clients |-> IF d = c THEN {}
                                   ELSE IF decided[d] THEN newer[d] \cup {c} ELSE {}]
    /\ stale' = [stale EXCEPT ![c] = FALSE]

\* c learns it holds the lock, with token tok, until its clock reaches dl.
\* (The service decided the grant earlier, with Decide.)
BecomeHolderUntil(c, tok, dl) ==
    /\ pc' = [pc EXCEPT ![c] = "held"]
    /\ token' = [token EXCEPT ![c] = tok]
    /\ deadline' = [deadline EXCEPT ![c] = dl]
    /\ expired' = [expired EXCEPT ![c] = ClientNow(c) >= dl]
    /\ UNCHANGED <<envVars, att, start, workEnd, late, sentAt, ready, resVars>>

\* The service decides c's grant and tells c in one step (RaftLease's
\* leader answers at once): Decide and BecomeHolderUntil together.
DecideAndHoldUntil(c, tok, dl) ==
    /\ Decide(c)
    /\ pc' = [pc EXCEPT ![c] = "held"]
    /\ token' = [token EXCEPT ![c] = tok]
    /\ deadline' = [deadline EXCEPT ![c] = dl]
    /\ expired' = [expired EXCEPT ![c] = ClientNow(c) >= dl]
    /\ UNCHANGED <<envVars, att, start, workEnd, late, sentAt, ready, staleAcc, highest>>

\* With a lease lock, the deadline is start + TTL - Drift on c's own clock
\* (central.rs, redlock.rs: the start is read before the request).
BecomeHolder(c, tok) == BecomeHolderUntil(c, tok, start[c] + TTL - Drift)

\* A renewal of c's lease succeeded: its answer carries a new deadline dl,
\* which c's validity checks use from now on (crates/sim/src/holder.rs).  The
\* hold goes on only if the old deadline had not passed yet: once c's clock
\* reached its deadline the hold has ended (expired stays TRUE), as the S1
\* checker computes holds (crates/check/src/holds.rs: renewals that succeeded
\* before the deadline passed move it).  Such a c then starts no new write.
RenewUntil(c, dl) ==
    /\ deadline' = [deadline EXCEPT ![c] = dl]
    /\ expired' = [expired EXCEPT ![c] = @ \/ ClientNow(c) >= dl]
    /\ UNCHANGED <<envVars, pc, att, start, token, workEnd, late, sentAt, ready, resVars>>

\* c's acquire or release ended; it goes back to its loop.
\* (The values of the finished round are cleared: fewer distinct states.)
BackToIdle(c) ==
    /\ pc' = [pc EXCEPT ![c] = "idle"]
    /\ start' = [start EXCEPT ![c] = 0]
    /\ deadline' = [deadline EXCEPT ![c] = 0]
    /\ expired' = [expired EXCEPT ![c] = TRUE]
    /\ token' = [token EXCEPT ![c] = 0]
    /\ decided' = [decided EXCEPT ![c] = FALSE]
    /\ newer' = [newer EXCEPT ![c] = {}]
    /\ stale' = [stale EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<envVars, att, workEnd, late, sentAt, ready, staleAcc, highest>>

\* After its writes (or having given up), c releases.
BeginRelease(c) ==
    /\ pc[c] \in {"held", "lost"} /\ ~paused[c]
    /\ pc' = [pc EXCEPT ![c] = "releasing"]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd, late, sentAt, ready, resVars>>

-----------------------------------------------------------------------------
(* Properties *)

\* docs/design.md §6: between its acquire ok and its release (or give-up) a client
\* holds while its clock is before its deadline, and, whatever the clock
\* says, from its validity check until the write it has committed to.
Holding(c) ==
    \/ pc[c] = "work"
    \/ pc[c] \in {"held", "writing", "written", "rejected"} /\ ~expired[c]

\* S1.
MutualExclusion == \A c, d \in Clients : c # d => ~(Holding(c) /\ Holding(d))

\* Clients are interchangeable (when they are model values): TLC may
\* explore one state of each class of states equal up to renaming them.
ClientSymmetry == Permutations(Clients)

\* S2 (docs/design.md §7): the resource never accepted a write from a grant after
\* it had accepted one from a grant the service decided later.
ResourceSafety == ~staleAcc
=============================================================================
