#!/usr/bin/env bash
# Runs the campaign of sims/ as a Kubernetes Indexed Job (deploy/kubernetes/campaign-job.yaml)
# and brings the merged report back. See --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: deploy/run-campaign.sh --image REGISTRY/locksim:TAG [OPTIONS]

Runs `locksim campaign sims/` as the Kubernetes Indexed Job of
deploy/kubernetes/campaign-job.yaml on the cluster kubectl points at, and merges it here:

  1. docker build -t IMAGE <repository root> && docker push IMAGE   (skip with --no-build)
  2. kubectl create the Job, with IMAGE in place of the REGISTRY/locksim:TAG placeholder
  3. wait until the Job is Complete or Failed (polls `kubectl get job`; never hangs on a failure)
  4. for each completion index, `kubectl logs` its succeeded pod and decode the shard's
     records that the pod printed between its marker lines (checked against their size and
     sha256) into OUT/shards/shard-I.jsonl (the raw logs are kept in OUT/logs/)
  5. locksim merge OUT/shards/*.jsonl --report OUT/report.html: the summary goes to
     OUT/summary.txt and to this terminal; the report page and its traces (OUT/report-files/)
     are written here, so nothing is left to copy out of the cluster

No ReadWriteMany volume: each pod keeps its records in its own emptyDir and prints them to its
log. The cluster needs Kubernetes >= 1.29 (backoffLimitPerIndex); the image must be pullable by
its nodes (a registry you can push to: there is no public locksim image).

Options:
  --image IMAGE      the image to build, push and run, e.g. registry.example.com/team/locksim:v1
                     (REGISTRY/locksim:TAG in the manifest is a placeholder: this replaces it)
  --no-build         do not build or push: IMAGE is already in the registry
  --namespace NS     the namespace for the Job (default: kubectl's current one)
  --out DIR          where logs, shards, summary and report go (default: campaign-out); must
                     not exist or be empty, unless --force
  --force            write into a non-empty --out DIR (replacing what is there)
  --timeout T        give up waiting after T (e.g. 7200, 90m, 2h; default 2h): exit 3; the Job
                     keeps running and --collect-only collects it later
  --poll SECONDS     how often to look at the Job (default 15)
  --locksim PATH     the locksim binary that merges (default: `locksim` on PATH, else
                     `docker run IMAGE merge ...`)
  --replace          delete a Job of the same name (and its pods) before creating this one
  --collect-only     create nothing: wait for the existing Job, collect and merge it
  --print-manifest   print the Job manifest with IMAGE in it and exit
  -h, --help         this help

Exit codes: 0 every campaign file's expectation met; 1 one failed (merge's exit 1: see the
summary and report); 2 usage or setup error (a tool missing, the Job exists); 3 the Job
failed or the wait timed out (after a failure, the succeeded shards are merged with
`merge --partial` into OUT/ all the same); 4 a shard's records could not be collected from its
log (missing, cut short or corrupt) or merge refused them.

No cluster can be started where locksim is developed: scripts/check-campaign-deploy.py runs
this script against a stand-in kubectl that runs each index's pod command locally.
EOF
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
manifest="$root/deploy/kubernetes/campaign-job.yaml"
placeholder="REGISTRY/locksim:TAG"
job="locksim-campaign"
container=locksim

image="" build=1 namespace="" out=campaign-out force=0 timeout=2h poll=15 locksim=""
replace=0 collect_only=0 print_manifest=0

die() { # code message...
  local code=$1
  shift
  echo "run-campaign: error: $*" >&2
  exit "$code"
}
say() { echo "run-campaign: $*" >&2; }

need_value() { if [ $# -lt 2 ] || [ -z "$2" ]; then die 2 "$1 needs a value (see --help)"; fi; }

while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --image) need_value "$@"; image=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --namespace) need_value "$@"; namespace=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --force) force=1; shift ;;
    --timeout) need_value "$@"; timeout=$2; shift 2 ;;
    --poll) need_value "$@"; poll=$2; shift 2 ;;
    --locksim) need_value "$@"; locksim=$2; shift 2 ;;
    --replace) replace=1; shift ;;
    --collect-only) collect_only=1; build=0; shift ;;
    --print-manifest) print_manifest=1; shift ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
  esac
done

[ -n "$image" ] || die 2 "--image is required: the image your cluster pulls, e.g. registry.example.com/team/locksim:v1 (see --help)"
[ "$image" != "$placeholder" ] || die 2 "--image $placeholder is the manifest's placeholder: give your registry and tag"
case "$image" in *[[:space:]\"\'\\]*) die 2 "--image '$image' has a space, quote or backslash" ;; esac
[[ "$poll" =~ ^[0-9]+$ ]] || die 2 "--poll '$poll' is not a number of seconds"
case "$timeout" in
  *h) [[ "${timeout%h}" =~ ^[0-9]+$ ]] && timeout_s=$((${timeout%h} * 3600)) ;;
  *m) [[ "${timeout%m}" =~ ^[0-9]+$ ]] && timeout_s=$((${timeout%m} * 60)) ;;
  *s) [[ "${timeout%s}" =~ ^[0-9]+$ ]] && timeout_s=${timeout%s} ;;
  *) [[ "$timeout" =~ ^[0-9]+$ ]] && timeout_s=$timeout ;;
esac
[ -n "${timeout_s:-}" ] || die 2 "--timeout '$timeout' is not a duration like 7200, 90m or 2h"

render() {
  grep -q "image: $placeholder\$" "$manifest" || die 2 "$manifest has no 'image: $placeholder' line to replace"
  sed "s|image: $placeholder\$|image: $image|" "$manifest"
}

if [ "$print_manifest" = 1 ]; then
  render
  exit 0
fi

kube() {
  if [ -n "$namespace" ]; then kubectl --namespace "$namespace" "$@"; else kubectl "$@"; fi
}

command -v kubectl >/dev/null || die 2 "kubectl is not on PATH (https://kubernetes.io/docs/tasks/tools/)"
if [ -n "$locksim" ]; then
  [ -x "$locksim" ] || die 2 "--locksim $locksim is not an executable"
elif command -v locksim >/dev/null; then
  locksim=$(command -v locksim)
fi
if [ "$build" = 1 ] || [ -z "$locksim" ]; then
  command -v docker >/dev/null || die 2 "docker is not on PATH (needed to build the image, or to merge without --locksim)"
fi
for tool in base64 gzip awk; do
  command -v "$tool" >/dev/null || die 2 "$tool is not on PATH (needed to decode the shards' logs)"
done

if [ -e "$out" ] && [ -n "$(ls -A "$out")" ] && [ "$force" = 0 ]; then
  die 2 "--out $out is not empty: give another --out, or --force"
fi
mkdir -p "$out/logs" "$out/shards"
rm -f "$out"/logs/* "$out"/shards/*
out=$(cd "$out" && pwd)

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum | cut -d' ' -f1; else shasum -a 256 | cut -d' ' -f1; fi
}

# 1. The image.
if [ "$build" = 1 ]; then
  say "building $image from $root (the Dockerfile at the root: a release build, several minutes)"
  docker build -t "$image" "$root" || die 2 "docker build failed"
  say "pushing $image"
  docker push "$image" || die 2 "docker push $image failed: is this machine logged in to its registry (docker login)?"
fi

# 2. The Job.
if [ "$collect_only" = 0 ]; then
  if [ "$replace" = 1 ]; then
    say "deleting job/$job and its pods, if they exist"
    kube delete job "$job" --ignore-not-found --cascade=foreground --wait=true >&2
  elif kube get job "$job" >/dev/null 2>&1; then
    die 2 "job/$job exists: collect it with --collect-only, or delete it first with --replace"
  fi
  render | kube create -f - >&2 || die 2 "kubectl create of job/$job failed"
fi
uid=$(kube get job "$job" -o 'jsonpath={.metadata.uid}') || die 2 "no job/$job (kubectl get failed)"
shards=$(kube get job "$job" -o 'jsonpath={.spec.completions}')
[[ "$shards" =~ ^[0-9]+$ ]] || die 2 "job/$job has no completions count: '$shards'"

# 3. Wait for Complete or Failed: `kubectl wait --for=condition=complete` alone would sit until
# its timeout on a failed Job.
say "waiting for job/$job ($shards shards; up to $timeout; every ${poll}s)"
deadline=$((SECONDS + timeout_s))
last="" state=""
while :; do
  status=$(kube get job "$job" -o 'jsonpath={.status.succeeded}/{.status.failed}/{.status.failedIndexes}/{range .status.conditions[?(@.status=="True")]}{.type},{end}') \
    || die 3 "kubectl get job/$job failed"
  IFS=/ read -r succeeded failed failed_indexes conditions <<<"$status"
  case ",$conditions" in
    *,Complete,*) state=complete ;;
    *,Failed,*) state=failed ;;
  esac
  now="${succeeded:-0} of $shards shards done, ${failed:-0} pods failed"
  [ "$now" = "$last" ] || say "$now"
  last=$now
  [ -z "$state" ] || break
  [ "$SECONDS" -lt "$deadline" ] || die 3 "job/$job is neither complete nor failed after $timeout; it keeps running: collect it later with --collect-only --timeout ..."
  sleep "$poll"
done

# 4. Each index's records, from the log of its succeeded pod.
unframe() { # index log shard-file
  local i=$1 log=$2 file=$3 begin end header bytes sum
  begin="locksim-records begin index=$i "
  end="locksim-records end index=$i"
  [ "$(grep -c "^$begin" "$log")" = 1 ] || { say "index $i: its log has no records (no '$begin...' line)"; return 1; }
  [ "$(grep -cx "$end" "$log")" = 1 ] || { say "index $i: its log is cut short (no '$end' line): was it rotated? (kubelet's containerLogMaxSize)"; return 1; }
  header=$(grep "^$begin" "$log")
  bytes=${header#* bytes=}; bytes=${bytes%% *}
  sum=${header#* sha256=}; sum=${sum%% *}
  awk -v b="$begin" -v e="$end" 'index($0, b) == 1 { on = 1; next } $0 == e { on = 0 } on' "$log" \
    | base64 -d | gzip -dc >"$file" || { say "index $i: its records do not decode (base64, gzip)"; return 1; }
  if [ "$(wc -c <"$file" | tr -d ' ')" != "$bytes" ] || [ "$(sha256 <"$file")" != "$sum" ]; then
    say "index $i: its records are not the $bytes bytes with sha256 $sum its pod wrote"
    return 1
  fi
}

collected=() missing=()
for ((i = 0; i < shards; i++)); do
  pods=$(kube get pods -l "batch.kubernetes.io/controller-uid=$uid,batch.kubernetes.io/job-completion-index=$i" \
    --field-selector=status.phase=Succeeded -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}') \
    || die 4 "kubectl get pods of index $i failed"
  pod=${pods%%$'\n'*}
  if [ -z "$pod" ]; then
    missing+=("$i")
    [ "$state" = failed ] || say "index $i: no succeeded pod (deleted? pods of a finished Job stay until it is deleted)"
    continue
  fi
  log="$out/logs/shard-$i.log"
  kube logs "$pod" -c "$container" >"$log" || { missing+=("$i"); say "index $i: kubectl logs $pod failed"; continue; }
  if unframe "$i" "$log" "$out/shards/shard-$i.jsonl"; then
    collected+=("$out/shards/shard-$i.jsonl")
  else
    rm -f "$out/shards/shard-$i.jsonl"
    missing+=("$i")
  fi
done
say "collected ${#collected[@]} of $shards shards into $out/shards/"

# 5. Merge here.
merge() {
  if [ -n "$locksim" ]; then
    "$locksim" merge "$@" --report "$out/report.html" --force
  else
    local args=() f
    for f in "$@"; do args+=("${f/#"$out"//out}"); done
    docker run --rm --user "$(id -u):$(id -g)" -v "$out:/out" "$image" \
      merge "${args[@]}" --report /out/report.html --force
  fi
}

if [ "$state" = failed ]; then
  say "job/$job FAILED: failed indexes ${failed_indexes:-?} (kubectl describe job/$job; kubectl logs -l batch.kubernetes.io/job-completion-index=I,batch.kubernetes.io/controller-uid=$uid)"
  if [ ${#collected[@]} -gt 0 ]; then
    say "merging the ${#collected[@]} succeeded shards with --partial into $out/summary.txt and $out/report.html"
    merge --partial "${collected[@]}" >"$out/summary.txt" || true
    cat "$out/summary.txt"
  fi
  exit 3
fi
[ ${#missing[@]} = 0 ] || die 4 "could not collect the records of index(es) ${missing[*]} (logs in $out/logs/)"

code=0
merge "${collected[@]}" >"$out/summary.txt" || code=$?
cat "$out/summary.txt"
case "$code" in
  0) say "every expectation met; summary $out/summary.txt, report $out/report.html" ;;
  1) say "a campaign file's expectation failed: summary $out/summary.txt, report $out/report.html"; exit 1 ;;
  *) die 4 "locksim merge exited $code" ;;
esac
say "job/$job stays (its pods and logs too) until you delete it: kubectl delete job $job"
