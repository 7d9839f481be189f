------------------------------ MODULE Redlock ------------------------------
(***************************************************************************)
(* Redlock ("Distributed Locks with Redis", redis.io; crates/algos/src/   *)
(* redlock.rs) over N independent Redis-like masters (the server of       *)
(* Central, one per master).  The client                                  *)
(*  1. reads its clock (start) and picks a fresh owner value;            *)
(*  2. tries SET key owner NX PX ttl on each master in turn (MasterOrder); *)
(*  3. holds the lock when a majority said yes and the validity           *)
(*     TTL - elapsed - Drift is positive, i.e. its clock is still before  *)
(*     start + TTL - Drift, which is its deadline; otherwise it unlocks   *)
(*     every master (compare-and-delete) and fails;                       *)
(*  4. releases with compare-and-delete on every master: ok when one said *)
(*     done, fail when none did and all answered, info otherwise.         *)
(* Each master judges expiry on its own clock (wall clock by default: a   *)
(* step forward frees the key early, case K5), and a master without       *)
(* persistence restarts empty (case K4; Kleppmann, "How to do distributed *)
(* locking", 2016, and the Redis document's "delayed restarts").          *)
(*                                                                         *)
(* Messages: one step per master contacted.  A request to a crashed       *)
(* master is lost (the client times out and counts no); between the pairs *)
(* in LossyPairs (cut by a partition, a loss window, lost replies) any    *)
(* request or reply may be lost.                                          *)
(***************************************************************************)
EXTENDS LeaseClients

CONSTANTS
    MasterOrder,  \* the masters as a sequence, in the order clients try them
    Crashes,      \* BOOLEAN: the nemesis may crash and restart masters
    Fsync,        \* BOOLEAN: a master's lock table survives a crash
    LossyPairs    \* pairs <<client, master>> whose requests and replies may be lost

VARIABLES
    locks,   \* locks[m]: master m's entry for the key: [owner, exp (m's clock)]
    down,    \* down[m]: master m is crashed
    next,    \* next[c]: index in MasterOrder of the master c contacts next
    yes,     \* yes[c]: masters that granted c's current attempt (replies seen)
    rok,     \* rok[c]: masters that answered "done" to c's release
    runk,    \* runk[c]: masters that did not answer c's release
    gr       \* gr[c]: masters that set the key for c's current attempt, lost replies
             \* included (ghost: the service decided when a majority had, for S2)

rlVars == <<locks, down, next, yes, rok, runk, gr>>
vars == <<baseVars, rlVars>>

\* Values for the models' configurations (`MasterOrder <- ThreeMasters`).
ThreeMasters == <<"n1", "n2", "n3">>
NoLoss == {}

N == Len(MasterOrder)
Quorum == N \div 2 + 1
Masters == {MasterOrder[i] : i \in 1..N}
NoLock == [owner |-> NoOwner, exp |-> 0]
Live(m) == locks[m].owner # NoOwner /\ ServerNow(m) < locks[m].exp
Mine(m, c) == Live(m) /\ locks[m].owner = Owner(c)
Cur(c) == MasterOrder[next[c]]
Lossy(c) == <<c, Cur(c)>> \in LossyPairs

Init ==
    /\ BaseInit
    /\ locks = [m \in Masters |-> NoLock]
    /\ down = [m \in Masters |-> FALSE]
    /\ next = [c \in Clients |-> 1]
    /\ yes = [c \in Clients |-> 0]
    /\ rok = [c \in Clients |-> 0]
    /\ runk = [c \in Clients |-> 0]
    /\ gr = [c \in Clients |-> 0]

-----------------------------------------------------------------------------
(* Acquire *)

Acquire(c) ==
    /\ BeginAcquire(c)
    /\ next' = [next EXCEPT ![c] = 1]
    /\ yes' = [yes EXCEPT ![c] = 0]
    /\ gr' = [gr EXCEPT ![c] = 0]
    /\ UNCHANGED <<locks, down, rok, runk>>

\* The current master sets the key for c (observable: a `grant` event);
\* the reply reaches c, or (Lossy) is lost.  The Quorum-th master to do so
\* is the service's decision (S2's order; the simulator's checker reads the
\* same from the grant events).
TryGrant(c, seen) ==
    /\ pc[c] = "acquiring" /\ next[c] <= N /\ ~paused[c]
    /\ ~down[Cur(c)] /\ ~Live(Cur(c))
    /\ seen \/ Lossy(c)
    /\ locks' = [locks EXCEPT ![Cur(c)] = [owner |-> Owner(c), exp |-> ServerNow(Cur(c)) + TTL]]
    /\ yes' = [yes EXCEPT ![c] = IF seen THEN @ + 1 ELSE @]
    /\ next' = [next EXCEPT ![c] = @ + 1]
    /\ gr' = [gr EXCEPT ![c] = @ + 1]
    /\ IF gr[c] + 1 = Quorum THEN Decide(c) ELSE UNCHANGED <<decided, newer, stale>>
    /\ UNCHANGED <<envVars, cliVars, staleAcc, highest, down, rok, runk>>

\* The current master refuses (the key is live), or the request is lost.
TryNo(c) ==
    /\ pc[c] = "acquiring" /\ next[c] <= N /\ ~paused[c]
    /\ \/ ~down[Cur(c)] /\ Live(Cur(c))
       \/ down[Cur(c)] \/ Lossy(c)
    /\ next' = [next EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<baseVars, locks, down, yes, rok, runk, gr>>

Valid(c) == ClientNow(c) < start[c] + TTL - Drift

\* (Back to idle, the counters are cleared: fewer distinct states.)
Reset(c) ==
    /\ next' = [next EXCEPT ![c] = 1]
    /\ yes' = [yes EXCEPT ![c] = 0]
    /\ rok' = [rok EXCEPT ![c] = 0]
    /\ runk' = [runk EXCEPT ![c] = 0]
    /\ gr' = [gr EXCEPT ![c] = 0]
    /\ UNCHANGED <<locks, down>>


AcqOk(c) ==
    /\ pc[c] = "acquiring" /\ next[c] = N + 1 /\ ~paused[c]
    /\ yes[c] >= Quorum /\ Valid(c)
    /\ BecomeHolder(c, 0)
    /\ Reset(c)

\* No majority, or no validity left: unlock every master, then fail.
StartUnlock(c) ==
    /\ pc[c] = "acquiring" /\ next[c] = N + 1 /\ ~paused[c]
    /\ ~(yes[c] >= Quorum /\ Valid(c))
    /\ pc' = [pc EXCEPT ![c] = "unlocking"]
    /\ next' = [next EXCEPT ![c] = 1]
    /\ UNCHANGED <<envVars, att, start, deadline, expired, token, workEnd,
                   late, sentAt, ready, resVars, locks, down, yes, rok, runk, gr>>

\* One compare-and-delete, during unlocking or release: the current master
\* deletes the key if c's attempt owns it and it is live (unless the
\* request is lost), and answers done; else it answers not-owner.
\* `ans` is what reached the client: "done", "notowner" or "lost".
DelStep(c, phase, ans) ==
    /\ pc[c] = phase /\ next[c] <= N /\ ~paused[c]
    /\ \/ ans = "done" /\ ~down[Cur(c)] /\ Mine(Cur(c), c)
          /\ locks' = [locks EXCEPT ![Cur(c)] = NoLock]
       \/ ans = "notowner" /\ ~down[Cur(c)] /\ ~Mine(Cur(c), c)
          /\ UNCHANGED locks
       \/ ans = "lost" /\ (down[Cur(c)] \/ Lossy(c))
          /\ UNCHANGED locks
       \/ ans = "lost" /\ Lossy(c) /\ ~down[Cur(c)] /\ Mine(Cur(c), c)   \* the reply is lost
          /\ locks' = [locks EXCEPT ![Cur(c)] = NoLock]
    /\ next' = [next EXCEPT ![c] = @ + 1]
    /\ rok' = [rok EXCEPT ![c] = IF ans = "done" THEN @ + 1 ELSE @]
    /\ runk' = [runk EXCEPT ![c] = IF ans = "lost" THEN @ + 1 ELSE @]
    /\ UNCHANGED <<baseVars, down, yes, gr>>

UnlockStep(c) == \E ans \in {"done", "notowner", "lost"} : DelStep(c, "unlocking", ans)

AcqFail(c) ==
    /\ pc[c] = "unlocking" /\ next[c] = N + 1 /\ ~paused[c]
    /\ BackToIdle(c)
    /\ Reset(c)

-----------------------------------------------------------------------------
(* Release *)

Release(c) ==
    /\ BeginRelease(c)
    /\ next' = [next EXCEPT ![c] = 1]
    /\ rok' = [rok EXCEPT ![c] = 0]
    /\ runk' = [runk EXCEPT ![c] = 0]
    /\ UNCHANGED <<locks, down, yes, gr>>

ReleaseStep(c) == \E ans \in {"done", "notowner", "lost"} : DelStep(c, "releasing", ans)

RelDone(c) ==
    /\ pc[c] = "releasing" /\ next[c] = N + 1 /\ ~paused[c]
    /\ BackToIdle(c)
    /\ Reset(c)

RelOk(c) == rok[c] > 0 /\ RelDone(c)
RelFail(c) == rok[c] = 0 /\ runk[c] = 0 /\ RelDone(c)
RelInfo(c) == rok[c] = 0 /\ runk[c] > 0 /\ RelDone(c)

-----------------------------------------------------------------------------
(* Masters crash (losing their keys unless Fsync) and restart *)

Crash(m) ==
    /\ Crashes /\ faults < MaxFaults /\ ~down[m]
    /\ down' = [down EXCEPT ![m] = TRUE]
    /\ faults' = faults + 1
    /\ locks' = IF Fsync THEN locks ELSE [locks EXCEPT ![m] = NoLock]
    /\ UNCHANGED <<now, off, paused, cliVars, resVars, next, yes, rok, runk, gr>>

Restart(m) ==
    /\ down[m]
    /\ down' = [down EXCEPT ![m] = FALSE]
    /\ UNCHANGED <<baseVars, locks, next, yes, rok, runk, gr>>

-----------------------------------------------------------------------------
\* The models' time step also forgets entries that have expired on their
\* master's clock: they behave as absent (as long as no clock steps back,
\* which the models do not do; trace validation keeps them).
TickForget ==
    /\ Tick
    /\ locks' = [m \in Masters |->
                   IF locks[m].owner # NoOwner /\ now' + SOff(m) < locks[m].exp
                   THEN locks[m] ELSE NoLock]
    /\ UNCHANGED <<down, next, yes, rok, runk, gr>>

Next ==
    \/ TickForget
    \/ \E m \in Masters : Crash(m) \/ Restart(m)
    \/ \E c \in Clients :
          \/ Acquire(c) \/ TryGrant(c, TRUE) \/ TryGrant(c, FALSE) \/ TryNo(c)
          \/ AcqOk(c) \/ StartUnlock(c) \/ UnlockStep(c) \/ AcqFail(c)
          \/ Release(c) \/ ReleaseStep(c) \/ RelOk(c) \/ RelFail(c) \/ RelInfo(c)
          \/ (ClientStep(c) \/ Pause(c) \/ Resume(c)) /\ UNCHANGED rlVars
    \/ \E n \in Nodes : Step(n) /\ UNCHANGED rlVars

Spec == Init /\ [][Next]_vars
=============================================================================
