-------------------------- MODULE FencingResource --------------------------
(***************************************************************************)
(* The protected resource: a storage service that accepts writes made     *)
(* under lock grants.  With fencing, a write carries the grant's token    *)
(* and the resource rejects any token below the highest it has accepted   *)
(* for the key (Kleppmann, "How to do distributed locking", 2016; the     *)
(* "sequencers" of Burrows, "The Chubby lock service", OSDI 2006, §2.4).  *)
(* A write without a token (token 0 here) is always accepted.  This is    *)
(* crates/sim/src/resource.rs for one key.                                *)
(*                                                                         *)
(* S2 (ResourceSafety, docs/design.md §7): the resource never accepts a write     *)
(* from a grant after it accepted a write from a later grant.  Grants are *)
(* numbered in the order the clients learned of them (`grants`, a ghost   *)
(* counter); `lastAcc` is the grant of the last accepted write and        *)
(* `maxAcc` the latest grant any accepted write came from.                *)
(*                                                                         *)
(* The lock specifications (Central, Redlock, RaftLease) use its rule,   *)
(* Fenced, through LeaseClients (which orders grants with ghost sets, so  *)
(* that the models stay small, instead of numbering them).  On its own,   *)
(* ResourceSpec lets any earlier grant write at any time, which is what a *)
(* paused or slow holder can do: fencing keeps S2 (FencingResource.cfg),  *)
(* plain writes do not (FencingResourceNoTokens.cfg).                     *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS
    Fencing,     \* BOOLEAN: grants carry tokens that the resource checks
    MaxGrants    \* bound of the standalone model (ResourceSpec) only

VARIABLES
    grants,      \* ghost: number of grants so far; grant g is the g-th
    highest,     \* highest token accepted so far (0: none)
    lastAcc,     \* ghost: the grant of the last accepted write (0: none)
    maxAcc       \* ghost: the latest grant of any accepted write (0: none)

resVars == <<highest, lastAcc, maxAcc>>

ResInit == highest = 0 /\ lastAcc = 0 /\ maxAcc = 0

\* A write carrying token `tok` is rejected (0 = no token: never rejected).
Fenced(tok) == tok # 0 /\ tok < highest

\* The resource accepts a write made under grant `g` carrying token `tok`.
Accept(g, tok) ==
    /\ ~Fenced(tok)
    /\ highest' = IF tok # 0 THEN tok ELSE highest
    /\ lastAcc' = g
    /\ maxAcc' = IF g > maxAcc THEN g ELSE maxAcc

\* S2: the last accepted write never comes from a grant older than one
\* already written.  (Checked in every state, so every stale acceptance is
\* caught in the state right after it.)
ResourceSafety == lastAcc >= maxAcc

(***************************************************************************)
(* Standalone model: a lock service hands out grants in order; grant g    *)
(* gets token g (monotonic, as a fencing counter does) when Fencing;      *)
(* any grant so far may write at any time (its holder may have been       *)
(* paused for an arbitrary time).                                          *)
(***************************************************************************)
TokenOf(g) == IF Fencing THEN g ELSE 0

ResourceInit == grants = 0 /\ ResInit

NewGrant == grants < MaxGrants /\ grants' = grants + 1 /\ UNCHANGED resVars

Write(g) ==
    /\ \/ Accept(g, TokenOf(g))
       \/ Fenced(TokenOf(g)) /\ UNCHANGED resVars
    /\ UNCHANGED grants

ResourceNext == NewGrant \/ \E g \in 1..grants : Write(g)

ResourceSpec == ResourceInit /\ [][ResourceNext]_<<grants, resVars>>
=============================================================================
