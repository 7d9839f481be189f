------------------------------ MODULE Central ------------------------------
(***************************************************************************)
(* The central lease lock: one Redis-like server (crates/algos/src/       *)
(* central.rs and lockserver.rs).                                          *)
(*                                                                         *)
(*  - acquire is `SET key owner NX PX ttl`: the server grants when the key *)
(*    is free or its lease has expired on the server's own clock, judged  *)
(*    lazily when a request arrives, as Redis does ("SET", "EXPIRE" and   *)
(*    "Distributed Locks with Redis" on redis.io);                         *)
(*  - release is compare-and-delete on the owner value (the Lua script of *)
(*    the Redis lock pattern); owner values are unique per attempt;       *)
(*  - the client's validity deadline is start + TTL - Drift on its clock, *)
(*    start read before the request (LeaseClients);                       *)
(*  - with Fencing (central-fencing) each grant carries the next value of *)
(*    a counter, which the resource checks (Kleppmann 2016; Chubby's      *)
(*    sequencers);                                                         *)
(*  - a crash loses the lock table and the counter unless Fsync (Redis    *)
(*    without AOF): tokens restart at 1;                                   *)
(*  - with Renew, a renewal task extends the lease while the client holds *)
(*    it (compare-owner-and-PEXPIRE); each answer "done" gives the grant   *)
(*    a new deadline, sent + TTL - Drift on the client's clock, sent read *)
(*    before the request (crates/sim/src/holder.rs; central.rs `extend`); *)
(*    "not the owner" ends the hold.                                       *)
(*                                                                         *)
(* Messages: a request is processed at most once, at any time after it is *)
(* sent; a crash drops the requests the server has not processed yet, and *)
(* the client then times out (an `info` outcome).                          *)
(***************************************************************************)
EXTENDS LeaseClients

CONSTANTS
    Crashes,   \* BOOLEAN: the nemesis may crash and restart the server
    Fsync,     \* BOOLEAN: the lock table and the token counter survive a crash
    Renew      \* BOOLEAN: a renewal task (Redisson's watchdog) extends the lease;
               \* each successful renewal moves the client's deadline

VARIABLES
    lock,       \* the key's entry: [owner |-> <<c, attempt>> or NoOwner, exp |-> server clock]
    nextToken,  \* the fencing counter
    req,        \* req[c]: c's request in flight to the server: "none", "acq", "rel"
    reply,      \* reply[c]: the server's answer in flight to c: "none", "granted", "held", "done", "notowner"
    rtok,       \* rtok[c]: the token in a "granted" answer
    down,       \* the server is crashed
    ext,        \* ext[c]: c's renewal: "none", "sent", "done", "notowner", "failed"
    extAt       \* extAt[c]: c's clock when it sent its current renewal

srvVars == <<lock, nextToken, req, reply, rtok, down, ext, extAt>>
vars == <<baseVars, srvVars>>

Srv == CHOOSE s \in Servers : TRUE
NoLock == [owner |-> NoOwner, exp |-> 0]
Live == lock.owner # NoOwner /\ ServerNow(Srv) < lock.exp

Init ==
    /\ BaseInit
    /\ lock = NoLock /\ nextToken = 1 /\ down = FALSE
    /\ req = [c \in Clients |-> "none"]
    /\ reply = [c \in Clients |-> "none"]
    /\ rtok = [c \in Clients |-> 0]
    /\ ext = [c \in Clients |-> "none"]
    /\ extAt = [c \in Clients |-> 0]

-----------------------------------------------------------------------------
(* Client side *)

Acquire(c) ==
    /\ BeginAcquire(c)
    /\ req' = [req EXCEPT ![c] = "acq"]
    /\ UNCHANGED <<lock, nextToken, reply, rtok, down, ext, extAt>>

AcqOk(c) ==
    /\ pc[c] = "acquiring" /\ reply[c] = "granted" /\ ~paused[c]
    /\ BecomeHolder(c, rtok[c])
    /\ reply' = [reply EXCEPT ![c] = "none"]
    /\ rtok' = [rtok EXCEPT ![c] = 0]
    /\ UNCHANGED <<lock, nextToken, req, down, ext, extAt>>

AcqFail(c) ==
    /\ pc[c] = "acquiring" /\ reply[c] = "held" /\ ~paused[c]
    /\ BackToIdle(c)
    /\ reply' = [reply EXCEPT ![c] = "none"]
    /\ UNCHANGED <<lock, nextToken, req, rtok, down, ext, extAt>>

\* The request was dropped by a crash: the client times out (`info`).
Timeout(c) ==
    /\ pc[c] \in {"acquiring", "releasing"} /\ ~paused[c]
    /\ req[c] = "none" /\ reply[c] = "none"
    /\ BackToIdle(c)
    /\ UNCHANGED srvVars

\* (Releasing stops the renewal task: holder.rs aborts it before the release.)
Release(c) ==
    /\ BeginRelease(c)
    /\ req' = [req EXCEPT ![c] = "rel"]
    /\ ext' = [ext EXCEPT ![c] = "none"]
    /\ extAt' = [extAt EXCEPT ![c] = 0]
    /\ UNCHANGED <<lock, nextToken, reply, rtok, down>>

-----------------------------------------------------------------------------
(* Renewal (Renew), as crates/sim/src/holder.rs does it: while c has its
   grant, a task beside its work asks the server to reset the lease to a full
   TTL on the server's clock (compare-owner-and-PEXPIRE), one request at a
   time.  The answer "done" gives the grant a new deadline, measured from the
   renewal's send: extAt + TTL - Drift on c's clock (central.rs `extend`
   reads its start before the request, as acquire does); c's validity checks
   use it from then on (RenewUntil).  The task sends whether or not the
   deadline has passed (it wakes on its period), so a c that was paused past
   its deadline still renews, but that renewal no longer extends its hold.
   "Not the owner" ends the hold (WatchdogLost).  No renewal request is lost
   here, and a renewal without an answer (an `extend` info, which the client
   retries) is not modelled: `locksim export-tla` refuses a trace with one.
   A renewal the server has not processed when it crashes is processed after
   the restart. *)

Extending == {"held", "work", "writing", "written", "rejected", "fenced"}

ExtInv(c) ==
    /\ Renew /\ ~paused[c] /\ ext[c] = "none" /\ pc[c] \in Extending
    /\ ext' = [ext EXCEPT ![c] = "sent"]
    /\ extAt' = [extAt EXCEPT ![c] = ClientNow(c)]
    /\ UNCHANGED <<baseVars, lock, nextToken, req, reply, rtok, down>>

ServerExtend(c) ==
    /\ ext[c] = "sent" /\ ~down
    /\ IF Live /\ lock.owner = Owner(c)
       THEN /\ lock' = [lock EXCEPT !.exp = ServerNow(Srv) + TTL]
            /\ ext' = [ext EXCEPT ![c] = "done"]
       ELSE /\ UNCHANGED lock
            /\ ext' = [ext EXCEPT ![c] = "notowner"]
    /\ UNCHANGED <<baseVars, nextToken, req, reply, rtok, down, extAt>>

ExtOk(c) ==
    /\ ext[c] = "done" /\ ~paused[c]
    /\ RenewUntil(c, extAt[c] + TTL - Drift)
    /\ ext' = [ext EXCEPT ![c] = "none"]
    /\ extAt' = [extAt EXCEPT ![c] = 0]
    /\ UNCHANGED <<lock, nextToken, req, reply, rtok, down>>

ExtFail(c) ==
    /\ ext[c] = "notowner" /\ ~paused[c]
    /\ ext' = [ext EXCEPT ![c] = "failed"]
    /\ extAt' = [extAt EXCEPT ![c] = 0]
    /\ UNCHANGED <<baseVars, lock, nextToken, req, reply, rtok, down>>

\* c's renewal task tells it the lock is lost: its hold ends (but for a write
\* it is already working towards), it starts no new write.
WatchdogLost(c) ==
    /\ ext[c] = "failed" /\ ~paused[c]
    /\ ext' = [ext EXCEPT ![c] = "none"]
    /\ expired' = [expired EXCEPT ![c] = TRUE]
    /\ UNCHANGED <<envVars, pc, att, start, deadline, token, workEnd, late, sentAt, ready,
                   resVars, lock, nextToken, req, reply, rtok, down, extAt>>

RelOk(c) ==
    /\ pc[c] = "releasing" /\ reply[c] = "done" /\ ~paused[c]
    /\ BackToIdle(c)
    /\ reply' = [reply EXCEPT ![c] = "none"]
    /\ UNCHANGED <<lock, nextToken, req, rtok, down, ext, extAt>>

RelFail(c) ==
    /\ pc[c] = "releasing" /\ reply[c] = "notowner" /\ ~paused[c]
    /\ BackToIdle(c)
    /\ reply' = [reply EXCEPT ![c] = "none"]
    /\ UNCHANGED <<lock, nextToken, req, rtok, down, ext, extAt>>

-----------------------------------------------------------------------------
(* Server side: each step processes one request *)

\* (The service's decision, for S2's order: Decide.)
ServerGrant(c) ==
    /\ req[c] = "acq" /\ ~down /\ ~Live
    /\ lock' = [owner |-> Owner(c), exp |-> ServerNow(Srv) + TTL]
    /\ nextToken' = nextToken + 1
    /\ rtok' = [rtok EXCEPT ![c] = IF Fencing THEN nextToken ELSE 0]
    /\ reply' = [reply EXCEPT ![c] = "granted"]
    /\ req' = [req EXCEPT ![c] = "none"]
    /\ Decide(c)
    /\ UNCHANGED <<envVars, cliVars, staleAcc, highest, down, ext, extAt>>

ServerRefuse(c) ==
    /\ req[c] = "acq" /\ ~down /\ Live
    /\ reply' = [reply EXCEPT ![c] = "held"]
    /\ req' = [req EXCEPT ![c] = "none"]
    /\ UNCHANGED <<baseVars, lock, nextToken, rtok, down, ext, extAt>>

ServerRelease(c) ==
    /\ req[c] = "rel" /\ ~down
    /\ IF Live /\ lock.owner = Owner(c)
       THEN lock' = NoLock /\ reply' = [reply EXCEPT ![c] = "done"]
       ELSE UNCHANGED lock /\ reply' = [reply EXCEPT ![c] = "notowner"]
    /\ req' = [req EXCEPT ![c] = "none"]
    /\ UNCHANGED <<baseVars, nextToken, rtok, down, ext, extAt>>

Crash ==
    /\ Crashes /\ faults < MaxFaults /\ ~down
    /\ down' = TRUE
    /\ faults' = faults + 1
    /\ req' = [c \in Clients |-> "none"]
    /\ IF Fsync THEN UNCHANGED <<lock, nextToken>>
                ELSE lock' = NoLock /\ nextToken' = 1
    /\ UNCHANGED <<now, off, paused, cliVars, resVars, reply, rtok, ext, extAt>>

Restart ==
    /\ down
    /\ down' = FALSE
    /\ UNCHANGED <<baseVars, lock, nextToken, req, reply, rtok, ext, extAt>>

-----------------------------------------------------------------------------
\* The models' time step also forgets an entry that has expired on the
\* server's clock: it behaves as absent (as long as no clock steps back,
\* which the models do not do; trace validation keeps it).
TickForget ==
    /\ Tick
    /\ lock' = IF lock.owner # NoOwner /\ now' + SOff(Srv) < lock.exp THEN lock ELSE NoLock
    /\ UNCHANGED <<nextToken, req, reply, rtok, down, ext, extAt>>

Next ==
    \/ TickForget
    \/ Crash \/ Restart
    \/ \E c \in Clients :
          \/ Acquire(c) \/ AcqOk(c) \/ AcqFail(c) \/ Timeout(c)
          \/ Release(c) \/ RelOk(c) \/ RelFail(c)
          \/ ServerGrant(c) \/ ServerRefuse(c) \/ ServerRelease(c)
          \/ ExtInv(c) \/ ServerExtend(c) \/ ExtOk(c) \/ ExtFail(c) \/ WatchdogLost(c)
          \/ (ClientStep(c) \/ Pause(c) \/ Resume(c)) /\ UNCHANGED srvVars
    \/ \E n \in Nodes : Step(n) /\ UNCHANGED srvVars

Spec == Init /\ [][Next]_vars
=============================================================================
