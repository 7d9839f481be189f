--------------------------- MODULE RedlockTrace ----------------------------
(***************************************************************************)
(* Trace validation of Redlock: is a run of the simulator a behaviour of  *)
(* Redlock?  See CentralTrace for the method (Cirstea,                    *)
(* Kuppe, Loillier and Merz, "Validating traces of distributed programs   *)
(* against TLA+ specifications" (2024): the run's observable events       *)
(* become a sequence `Trace` of records (written by `locksim export-tla`),*)
(* and TraceNext lets each event be matched by the spec action that       *)
(* explains it, advancing the line counter `l`, while the spec's          *)
(* unobserved steps (time passing, a master refusing or a request lost,  *)
(* the unlock and release rounds, the client's validity check) happen in  *)
(* between without consuming an event.  A `grant` event on master m must  *)
(* be the master the client contacts next; an acquire fail must come     *)
(* with as many grants seen as the client's error message says.           *)
(* The trace is valid iff some behaviour consumes all of it: TLC          *)
(* then reports that TraceNotAccepted is violated (exit code 12).  If no  *)
(* behaviour does, TLC finishes without a violation (exit 0), and the     *)
(* last "matched" line it printed says how far the spec could follow.     *)
(*                                                                         *)
(* Each record: [id: the event's id in the trace, k: kind, n: the node it *)
(* happened on, c: the client concerned, t: true time in microseconds,    *)
(* v: a deadline (client clock, us), a clock step (us) or -1, tok: a      *)
(* fencing token or 0].  Times are the simulator's nanoseconds divided by *)
(* 1000; deadlines are compared within 2 us of rounding.                  *)
(***************************************************************************)
EXTENDS Redlock

CONSTANT Trace

VARIABLE l   \* the next event of Trace to explain

Ev == Trace[l]
Near(a, b) == a - b \in -2..2

\* Records the longest prefix matched so far, for the diagnosis of a
\* rejected trace (TLC registers are per worker: run with one worker).
Progress == l' > TLCGet(1) => (TLCSet(1, l') /\ PrintT(<<"matched", l' - 1>>))

TraceInit == Init /\ l = 1 /\ TLCSet(1, 1)

\* The event explained by the step: a spec action at the event's time.
Observed ==
    /\ l <= Len(Trace) /\ now = Ev.t
    /\ l' = l + 1
    /\ \/ Ev.k = "AcqInv"   /\ Acquire(Ev.n)
       \/ Ev.k = "Grant"    /\ next[Ev.c] <= N /\ Cur(Ev.c) = Ev.n
                            /\ \E seen \in BOOLEAN : TryGrant(Ev.c, seen)
       \/ Ev.k = "AcqOk"    /\ AcqOk(Ev.n) /\ Near(deadline'[Ev.n], Ev.v)
       \/ Ev.k = "AcqFail"  /\ AcqFail(Ev.n) /\ (Ev.v < 0 \/ yes[Ev.n] = Ev.v)
       \/ Ev.k = "RelInv"   /\ Release(Ev.n)
       \/ Ev.k = "RelOk"    /\ RelOk(Ev.n)
       \/ Ev.k = "RelFail"  /\ RelFail(Ev.n)
       \/ Ev.k = "RelInfo"  /\ RelInfo(Ev.n)
       \/ Ev.k = "WriteInv" /\ WriteInvoke(Ev.n) /\ token[Ev.n] = Ev.tok /\ UNCHANGED rlVars
       \/ Ev.k = "Accept"   /\ ResourceAccept(Ev.c) /\ token[Ev.c] = Ev.tok /\ UNCHANGED rlVars
       \/ Ev.k = "Reject"   /\ ResourceReject(Ev.c) /\ token[Ev.c] = Ev.tok /\ UNCHANGED rlVars
       \/ Ev.k = "WriteOk"  /\ WriteOk(Ev.n) /\ UNCHANGED rlVars
       \/ Ev.k = "WriteFail" /\ WriteFail(Ev.n) /\ UNCHANGED rlVars
       \/ Ev.k = "Lost"     /\ GiveUp(Ev.n) /\ UNCHANGED rlVars
       \/ Ev.k = "Pause"    /\ Pause(Ev.n) /\ UNCHANGED rlVars
       \/ Ev.k = "Resume"   /\ Resume(Ev.n) /\ UNCHANGED rlVars
       \/ Ev.k = "Step"     /\ ClockStep(Ev.n, Ev.v) /\ UNCHANGED rlVars
       \/ Ev.k = "Crash"    /\ Crash(Ev.n)
       \/ Ev.k = "Restart"  /\ Restart(Ev.n)
    /\ Progress

\* Steps the trace does not show.
Silent ==
    /\ UNCHANGED l
    /\ \/ l <= Len(Trace) /\ AdvanceTo(Ev.t) /\ UNCHANGED rlVars
       \/ \E c \in Clients :
             \/ TryNo(c) \/ StartUnlock(c) \/ UnlockStep(c) \/ ReleaseStep(c)
             \/ CheckValidity(c) /\ UNCHANGED rlVars

TraceNext == Observed \/ Silent

\* Violated (TLC exit 12) exactly when the whole trace has been explained.
TraceNotAccepted == l <= Len(Trace)
=============================================================================
