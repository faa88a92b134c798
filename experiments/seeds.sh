# Helpers that experiments/decentralized.sh and experiments/local_methods.sh
# source (after cd to the repository): statistics over seeds.
ci() { # DB SQL [AWK-ARGS...]: "group|value" rows -> mean +- 95% interval
  db=$1; sql=$2; shift 2
  sqlite3 -list "$db" "$sql" | awk -f experiments/ci.awk "$@"
}
nseeds() { # DB [CONDITION]: the fewest seeds of any configuration (figure titles)
  sqlite3 "$1" "select min(c) from (select count(*) c from runs r where r.status = 'done'
    ${2:+and $2} group by replace(r.config, 'seed = ' || r.seed || char(10), ''))"
}
