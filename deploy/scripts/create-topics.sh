#!/usr/bin/env bash
# Declares the relay's Kafka topics with the Kafka distribution's own tools, for operators without Node: the same
# topics and settings as `poimen-relay topics apply` (docs/operations.md#create-the-topics-without-node).
# Unlike `topics apply`, a topic that exists already is left alone and not compared with the declaration
# (kafka-topics --create --if-not-exists); `kafka-topics --describe` or `poimen-relay topics apply` compares.
#
# The topics file (--file) is read without yq, so only this subset of YAML is accepted, the shape of
# deploy/topics.yaml:
#   partitions: <n>                               optional, default 3
#   replicationFactor: <n>                        optional
#   tenants: [acme, globex]                       or a block list:  tenants:  then lines  "  - acme"
#   extraTopics:                                  optional
#     - name: <kafka topic name>
#       partitions: <n>                           optional
#       replicationFactor: <n>                    optional
#       config: { retention.ms: '1209600000' }    or a block map:   config:  then lines  "    retention.ms: '1209600000'"
# Names and config values may be quoted with ' or " (numbers not, as for the relay); a # at a line's start or after a blank starts a comment; no tabs, anchors,
# multi-line values or other keys. Anything else fails with the line's number (exit 2).
set -euo pipefail
export LC_ALL=C

# The relay's settings (src/kafka/topics.ts, src/contract/names.ts); test/unit/createTopicsScript.test.ts fails
# when these and the relay's drift apart.
DEFAULT_PARTITIONS=3
TARGET_REPLICATION_FACTOR=3 # an undeclared factor on a cluster of 3 or more live brokers (else the broker's default)
MIN_INSYNC_REPLICAS=2       # on every topic of 3 or more replicas whose own config sets none
DLQ_CONFIG=(retention.ms=1209600000 max.message.bytes=8388608)
TENANT_RE='^[a-z0-9][a-z0-9_-]{0,62}$'
TOPIC_RE='^[A-Za-z0-9._-]{1,249}$'

me=$(basename "$0")

usage() {
  cat <<EOF
Usage: $me [options] [tenant...]

Creates, for each tenant, poimen.<tenant>.dispatch, poimen.<tenant>.events and poimen.<tenant>.dispatch.dlq
(retention.ms=1209600000, max.message.bytes=8388608), plus a topics file's tenants and extraTopics, with
kafka-topics --create --if-not-exists: running it again creates only what is missing.

Options:
  --tenant <tenant>            a tenant (repeatable; tenants may also be given as arguments)
  --file <path>                a topics file in the shape of deploy/topics.yaml (see this script's header)
  --partitions <n>             partitions of each --tenant's topics (default $DEFAULT_PARTITIONS; the file has its own)
  --replication-factor <n>     replication factor of each --tenant's topics (the file has its own). Undeclared:
                               $TARGET_REPLICATION_FACTOR on a cluster of $TARGET_REPLICATION_FACTOR or more live brokers (counted with
                               kafka-broker-api-versions), else the broker's default.replication.factor.
                               Topics of 3 or more replicas get min.insync.replicas=$MIN_INSYNC_REPLICAS.
  --bootstrap-server <hosts>   Kafka brokers, host:port[,host:port] (env KAFKA_BOOTSTRAP_SERVER, else KAFKA_BROKERS)
  --command-config <path>      admin client properties for TLS/SASL, passed to the Kafka tools
                               (env KAFKA_COMMAND_CONFIG)
  --dry-run                    print the kafka-topics commands instead of running them
  -h, --help                   this text

Environment:
  KAFKA_TOPICS                 the kafka-topics command (default kafka-topics.sh on PATH), e.g.
                               /opt/kafka/bin/kafka-topics.sh; split on blanks, so "docker exec kafka kafka-topics.sh" works
  KAFKA_BROKER_API_VERSIONS    the kafka-broker-api-versions command (default kafka-broker-api-versions.sh),
                               run only when some topic's replication factor is not declared

Exit codes: 0 done, 1 a Kafka tool failed, 2 a usage or file error.
EOF
}

fail() {
  printf '%s: %s\n' "$me" "$1" >&2
  exit 2
}

positive() { # flag value
  [[ $2 =~ ^[1-9][0-9]*$ ]] || fail "$1 = \"$2\": must be a positive whole number"
}

tenants=()
file=''
partitions=$DEFAULT_PARTITIONS
rf=''
bootstrap=${KAFKA_BOOTSTRAP_SERVER:-${KAFKA_BROKERS:-}}
command_config=${KAFKA_COMMAND_CONFIG:-}
dry_run=false
while (($# > 0)); do
  case $1 in
    -h | --help) usage && exit 0 ;;
    --tenant | --file | --partitions | --replication-factor | --bootstrap-server | --command-config)
      (($# >= 2)) || fail "$1 needs a value"
      case $1 in
        --tenant) tenants+=("$2") ;;
        --file) file=$2 ;;
        --partitions) positive "$1" "$2" && partitions=$2 ;;
        --replication-factor) positive "$1" "$2" && rf=$2 ;;
        --bootstrap-server) bootstrap=$2 ;;
        --command-config) command_config=$2 ;;
      esac
      shift 2
      ;;
    --dry-run) dry_run=true && shift ;;
    --) shift && tenants+=("$@") && break ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) tenants+=("$1") && shift ;;
  esac
done

[[ -n $bootstrap ]] || fail '--bootstrap-server (or KAFKA_BOOTSTRAP_SERVER / KAFKA_BROKERS) is required'
[[ -z $command_config || -r $command_config ]] || fail "--command-config $command_config: not a readable file"

validate_tenant() {
  # A tenant is a topic-name segment: anything else could widen the ingester's topic pattern or collide with
  # another tenant's topics (contract §2).
  [[ $1 =~ $TENANT_RE ]] || fail "tenant \"$1\" must match $TENANT_RE"
}

# One topic an entry, its fields split by US (\x1f, which no topic name or config holds; a tab would not keep an
# empty field): name, partitions, replication factor (empty: undeclared), then name=value configs.
US=$'\x1f'
specs=()
spec() { # name partitions rf [name=value...]
  local IFS=$US
  specs+=("$*")
}
add_tenant() { # tenant partitions rf
  validate_tenant "$1"
  spec "poimen.$1.dispatch" "$2" "$3"
  spec "poimen.$1.events" "$2" "$3"
  spec "poimen.$1.dispatch.dlq" "$2" "$3" "${DLQ_CONFIG[@]}"
}

for t in "${tenants[@]}"; do add_tenant "$t" "$partitions" "$rf"; done

if [[ -n $file ]]; then
  [[ -r $file ]] || fail "--file $file: not a readable file"
  # Prints one line per setting: P partitions, R factor, T tenant, X extra topic (its fields as in specs), or
  # ERR and the first problem.
  program=$(
    cat <<'AWK'
function err(msg) { print "ERR" US "line " NR ": " msg; failed = 1; exit 1 }
function trim(s) { gsub(/^[ ]+|[ ]+$/, "", s); return s }
function unquote(s) {
  s = trim(s)
  if (s ~ /^'.*'$/) { s = substr(s, 2, length(s) - 2); gsub(/''/, "'", s); return s }
  if (s ~ /^".*"$/) return substr(s, 2, length(s) - 2)
  if (s ~ /^['"]/) err("unterminated quote: " s)
  return s
}
function whole(key, v) { v = trim(v); if (v !~ /^[1-9][0-9]*$/) err(key " must be a whole number >= 1, not \"" v "\""); return v }
function flow(v, o, c, out,   n, i, parts) {
  v = trim(v)
  if (substr(v, 1, 1) != o || substr(v, length(v), 1) != c) err("expected " o "..." c ", not \"" v "\"")
  v = trim(substr(v, 2, length(v) - 2))
  delete out
  if (v == "") return 0
  n = split(v, parts, ",")
  for (i = 1; i <= n; i++) out[i] = trim(parts[i])
  return n
}
function pair(s,   k) {
  if (index(s, ":") == 0) err("expected name: value, not \"" s "\"")
  k = trim(substr(s, 1, index(s, ":") - 1))
  if (k !~ /^[A-Za-z0-9._-]+$/) err("not a config name: \"" k "\"")
  cfg = cfg US k "=" unquote(substr(s, index(s, ":") + 1))
}
function flush() {
  if (item == 0) return
  if (name == "") err("an extraTopics entry needs a name")
  print "X" US name US part US repl cfg
  item = 0; name = ""; part = ""; repl = ""; cfg = ""
}
{
  line = $0
  if (line ~ /\t/) err("tabs are not YAML indentation")
  if (line ~ /^#/) line = ""
  sub(/ #.*$/, "", line)
  sub(/[ ]+$/, "", line)
  if (line == "") next
  match(line, /^ */); indent = RLENGTH; body = substr(line, indent + 1)
  if (indent == 0) {
    flush(); section = ""
    if (body !~ /^[A-Za-z]+:/) err("expected a top-level key, not \"" body "\"")
    key = substr(body, 1, index(body, ":") - 1); val = trim(substr(body, index(body, ":") + 1))
    if (key == "partitions") print "P" US whole(key, val)
    else if (key == "replicationFactor") print "R" US whole(key, val)
    else if (key == "tenants") {
      if (val == "") section = "tenants"
      else { n = flow(val, "[", "]", items); for (i = 1; i <= n; i++) print "T" US unquote(items[i]) }
    } else if (key == "extraTopics") {
      if (val == "") section = "extra"
      else if (flow(val, "[", "]", items) > 0) err("write extraTopics as a block list (- name: ...)")
    } else err("unknown key \"" key "\" (partitions, replicationFactor, tenants, extraTopics)")
    next
  }
  if (section == "tenants") {
    if (body !~ /^- /) err("expected \"- <tenant>\" under tenants, not \"" body "\"")
    print "T" US unquote(substr(body, 3)); next
  }
  if (section != "extra") err("unexpected indented line \"" body "\"")
  if (body ~ /^- /) { flush(); item = 1; keyIndent = indent + 2; inConfig = 0; body = substr(body, 3) }
  else if (!item) err("expected \"- name: ...\" under extraTopics, not \"" body "\"")
  else if (inConfig && indent > keyIndent) { pair(body); next }
  else if (indent != keyIndent) err("unexpected indentation of \"" body "\"")
  inConfig = 0
  if (index(body, ":") == 0) err("expected key: value, not \"" body "\"")
  key = substr(body, 1, index(body, ":") - 1); val = trim(substr(body, index(body, ":") + 1))
  if (key == "name") name = unquote(val)
  else if (key == "partitions") part = whole(key, val)
  else if (key == "replicationFactor") repl = whole(key, val)
  else if (key == "config") {
    if (val == "") inConfig = 1
    else { n = flow(val, "{", "}", items); for (i = 1; i <= n; i++) pair(items[i]) }
  } else err("unknown key \"" key "\" in an extraTopics entry (name, partitions, replicationFactor, config)")
}
END { if (!failed) flush() }
AWK
  )
  if ! parsed=$(awk -v US="$US" "$program" "$file"); then
    [[ $'\n'$parsed == *$'\n'ERR"$US"* ]] || fail "$file: could not be read"
  fi
  file_partitions=$DEFAULT_PARTITIONS
  file_rf=''
  file_tenants=()
  extras=()
  while IFS= read -r row; do
    case ${row%%"$US"*} in
      ERR) fail "$file: ${row#*"$US"}" ;;
      P) file_partitions=${row#*"$US"} ;;
      R) file_rf=${row#*"$US"} ;;
      T) file_tenants+=("${row#*"$US"}") ;;
      X) extras+=("${row#*"$US"}") ;;
    esac
  done <<<"$parsed"
  for t in "${file_tenants[@]}"; do validate_tenant "$t"; done
  for t in "${file_tenants[@]}"; do add_tenant "$t" "$file_partitions" "$file_rf"; done
  for x in "${extras[@]}"; do
    IFS=$US read -r -a f <<<"$x"
    [[ ${f[0]} =~ $TOPIC_RE ]] || fail "$file: extra topic \"${f[0]}\" is not a valid Kafka topic name ($TOPIC_RE)"
    spec "${f[0]}" "${f[1]:-$file_partitions}" "${f[2]:-$file_rf}" "${f[@]:3}"
  done
fi

((${#specs[@]} > 0)) || fail 'give tenants (--tenant or arguments) or --file'

need() { # variable words...
  command -v "$2" >/dev/null || fail "$2 not found: put it on PATH or set $1 (e.g. $1=/opt/kafka/bin/$(basename "$2"))"
}
read -r -a kafka_topics <<<"${KAFKA_TOPICS:-kafka-topics.sh}"
[[ $dry_run == true ]] || need KAFKA_TOPICS "${kafka_topics[@]}"
connect=(--bootstrap-server "$bootstrap")
[[ -z $command_config ]] || connect+=(--command-config "$command_config")

# The live brokers are counted once, and only when some topic leaves its factor to the cluster, as `topics apply`
# does: with fewer than 3 the broker's default.replication.factor decides (a topic made while one broker of
# three is down must not keep two replicas for good).
open_rf=''
for s in "${specs[@]}"; do
  IFS=$US read -r -a f <<<"$s"
  [[ -n ${f[2]:-} ]] || open_rf=$TARGET_REPLICATION_FACTOR
done
if [[ -n $open_rf ]]; then
  read -r -a tool <<<"${KAFKA_BROKER_API_VERSIONS:-kafka-broker-api-versions.sh}"
  need KAFKA_BROKER_API_VERSIONS "${tool[@]}"
  if ! out=$("${tool[@]}" "${connect[@]}" 2>&1); then
    printf '%s\n%s: %s could not list the brokers\n' "$out" "$me" "${tool[*]}" >&2
    exit 1
  fi
  # One "host:port (id: N rack: ...) -> (" line per live broker.
  brokers=$(grep -cE '^[^ ].* \(id: -?[0-9]+ rack: ' <<<"$out" || true)
  ((brokers >= TARGET_REPLICATION_FACTOR)) || open_rf=''
fi

for s in "${specs[@]}"; do
  IFS=$US read -r -a f <<<"$s"
  topic=${f[0]} topic_partitions=${f[1]} topic_rf=${f[2]:-$open_rf}
  configs=("${f[@]:3}")
  args=(--create --if-not-exists --topic "$topic" --partitions "$topic_partitions")
  [[ -z $topic_rf ]] || args+=(--replication-factor "$topic_rf")
  own_min_isr=false
  for c in "${configs[@]}"; do
    args+=(--config "$c")
    [[ $c != min.insync.replicas=* ]] || own_min_isr=true
  done
  if [[ -n $topic_rf ]] && ((topic_rf >= 3)) && [[ $own_min_isr == false ]]; then
    args+=(--config "min.insync.replicas=$MIN_INSYNC_REPLICAS")
  fi
  if [[ $dry_run == true ]]; then
    printf '%q ' "${kafka_topics[@]}" "${connect[@]}" "${args[@]}"
    printf '\n'
    continue
  fi
  if ! out=$("${kafka_topics[@]}" "${connect[@]}" "${args[@]}" 2>&1); then
    printf '%s\n%s: %s failed for %s\n' "$out" "$me" "${kafka_topics[*]}" "$topic" >&2
    exit 1
  fi
  if grep -q '^Created topic' <<<"$out"; then
    printf 'created   %s\n' "$topic"
  else
    printf 'exists    %s (left as it is)\n' "$topic"
  fi
done
