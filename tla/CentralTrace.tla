--------------------------- MODULE CentralTrace ---------------------------
(***************************************************************************)
(* Trace validation of the central lock (and central-fencing): is a run   *)
(* of the simulator a behaviour of Central?  The method of Cirstea,       *)
(* Kuppe, Loillier and Merz, "Validating traces of distributed programs   *)
(* against TLA+ specifications" (2024): the run's observable events       *)
(* become a sequence `Trace` of records (written by `locksim export-tla`),*)
(* and TraceNext lets each event be matched by the spec action that       *)
(* explains it, advancing the line counter `l`, while the spec's          *)
(* unobserved steps (time passing, the server refusing or deleting, the   *)
(* client's validity check) happen in between without consuming an       *)
(* event.  The trace is valid iff some behaviour consumes all of it: TLC  *)
(* then reports that TraceNotAccepted is violated (exit code 12).  If no  *)
(* behaviour does, TLC finishes without a violation (exit 0), and the     *)
(* last "matched" line it printed says how far the spec could follow.     *)
(*                                                                         *)
(* Each record: [id: the event's id in the trace, k: kind, n: the node it *)
(* happened on, c: the client concerned, t: true time in microseconds,    *)
(* v: a deadline (client clock, us: the acquire's or a renewal's), a      *)
(* clock step (us) or -1, tok: a fencing token or 0].  Times are the      *)
(* simulator's nanoseconds divided by 1000; deadlines are compared within *)
(* 2 us of rounding.                                                       *)
(***************************************************************************)
EXTENDS Central

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
       \/ Ev.k = "Grant"    /\ ServerGrant(Ev.c) /\ rtok'[Ev.c] = Ev.tok
       \/ Ev.k = "AcqOk"    /\ AcqOk(Ev.n) /\ token'[Ev.n] = Ev.tok
                            /\ Near(deadline'[Ev.n], Ev.v)
       \/ Ev.k = "AcqFail"  /\ AcqFail(Ev.n)
       \/ Ev.k = "AcqInfo"  /\ Timeout(Ev.n)
       \/ Ev.k = "RelInv"   /\ Release(Ev.n)
       \/ Ev.k = "RelOk"    /\ RelOk(Ev.n)
       \/ Ev.k = "RelFail"  /\ RelFail(Ev.n)
       \/ Ev.k = "RelInfo"  /\ Timeout(Ev.n)
       \/ Ev.k = "WriteInv" /\ WriteInvoke(Ev.n) /\ token[Ev.n] = Ev.tok /\ UNCHANGED srvVars
       \/ Ev.k = "Accept"   /\ ResourceAccept(Ev.c) /\ token[Ev.c] = Ev.tok /\ UNCHANGED srvVars
       \/ Ev.k = "Reject"   /\ ResourceReject(Ev.c) /\ token[Ev.c] = Ev.tok /\ UNCHANGED srvVars
       \/ Ev.k = "WriteOk"  /\ WriteOk(Ev.n) /\ UNCHANGED srvVars
       \/ Ev.k = "WriteFail" /\ WriteFail(Ev.n) /\ UNCHANGED srvVars
       \/ Ev.k = "Lost"     /\ ((GiveUp(Ev.n) /\ UNCHANGED srvVars) \/ WatchdogLost(Ev.n))
       \/ Ev.k = "ExtInv"   /\ ExtInv(Ev.n)
       \/ Ev.k = "ExtOk"    /\ ExtOk(Ev.n) /\ Near(deadline'[Ev.n], Ev.v)
       \/ Ev.k = "ExtFail"  /\ ExtFail(Ev.n)
       \/ Ev.k = "Pause"    /\ Pause(Ev.n) /\ UNCHANGED srvVars
       \/ Ev.k = "Resume"   /\ Resume(Ev.n) /\ UNCHANGED srvVars
       \/ Ev.k = "Step"     /\ ClockStep(Ev.n, Ev.v) /\ UNCHANGED srvVars
       \/ Ev.k = "Crash"    /\ Crash
       \/ Ev.k = "Restart"  /\ Restart
    /\ Progress

\* Steps the trace does not show.
Silent ==
    /\ UNCHANGED l
    /\ \/ l <= Len(Trace) /\ AdvanceTo(Ev.t) /\ UNCHANGED srvVars
       \/ \E c \in Clients :
             \/ ServerRefuse(c) \/ ServerRelease(c) \/ ServerExtend(c)
             \/ CheckValidity(c) /\ UNCHANGED srvVars
             \* A fenced write after the renewal task already reported the hold lost:
             \* the simulator records one `lost` per hold, so this give-up is silent.
             \/ pc[c] = "fenced" /\ expired[c] /\ GiveUp(c) /\ UNCHANGED srvVars

TraceNext == Observed \/ Silent

\* Violated (TLC exit 12) exactly when the whole trace has been explained.
TraceNotAccepted == l <= Len(Trace)
=============================================================================
