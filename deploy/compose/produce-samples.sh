#!/bin/sh
# Publishes sample dispatches for `docker compose up` with Kafka's own console producer (run in the Kafka
# image, so the samples need nothing from the relay's image). What each one shows, once relayed:
#   welcome, report   a workflow each and a run created by the sample runs API (201)
#   welcome again     a redelivery: absorbed by the workflow id, no second run
#   flaky             the API answers 503 + Retry-After first: the relay retries, then the run is created
#   refused           the API answers 422: a dead letter on poimen.<tenant>.dispatch.dlq
#   malformed         not JSON: dead-lettered by the ingester at once, no workflow
# Keys carry a per-run suffix (SAMPLE_RUN, default: the time) so each `docker compose up` makes new runs.
# Record keys are <tenant>:<dispatch_key>, the relay's convention.
# KAFKA_BIN (default /opt/kafka/bin, as in the Kafka image) locates the console producer.
set -eu
tenant="${TENANT:-demo}"
run="${SAMPLE_RUN:-$(date +%s)}"
topic="poimen.${tenant}.dispatch"
dispatch() { # dispatch_key workflow_ref goal_id-as-JSON
  printf '%s|{"workflow_ref":"%s","input":{"user":42,"plan":"pro"},"goal_id":%s,"dispatch_key":"%s"}\n' \
    "${tenant}:$1" "$2" "$3" "$1"
}
{
  dispatch "compose-${run}-welcome" onboarding@v3 '"g-17"'
  dispatch "compose-${run}-report" weekly-report@v1 null
  dispatch "compose-${run}-welcome" onboarding@v3 '"g-17"'
  dispatch "compose-${run}-flaky" onboarding@v3 '"g-18"'
  dispatch "compose-${run}-refused" nope@v0 null
  printf '%s|{"workflow_ref": "onboarding@v3", "dispatch_key": "compose-%s-malformed", \n' "${tenant}:compose-${run}-malformed" "${run}"
} | "${KAFKA_BIN:-/opt/kafka/bin}/kafka-console-producer.sh" \
  --bootstrap-server "${KAFKA_BROKERS:-kafka:9092}" --topic "${topic}" \
  --property parse.key=true --property 'key.separator=|' --producer-property acks=all
echo "published 6 sample records to ${topic} (run ${run}); follow them with:"
echo "  docker compose logs -f runs-api     # runs created, the retry, the refusal"
echo "  docker compose run --rm --no-deps topics dlq list --tenant ${tenant}   # the two dead letters"
