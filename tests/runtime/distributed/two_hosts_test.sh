#!/usr/bin/env bash
# Two ranks as on two machines: two network namespaces joined by a veth pair,
# each with its own hostname, Open MPI over TCP only (no shared memory),
# mpirun started in the first and reaching the second through an rsh agent
# that enters its namespace. The data-parallel check (ZeRO stage 1) must
# equal the one-process run within 1e-6 + 1e-5*|ref|. The namespaces are
# removed however the test ends. Needs root and `ip netns` (exit 77: skipped).
#   two_hosts_test.sh MPIRUN DATA_PARALLEL_CHECK
set -u
mpirun=$1 check=$2
[ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v unshare >/dev/null ||
  { echo "two_hosts_test: needs root, ip and unshare: skipped"; exit 77; }
tag=$$
a=onyx$tag-a b=onyx$tag-b
net=10.$((tag % 200 + 20)).$((tag / 200 % 250)).0
host_a=${net%.0}.1 host_b=${net%.0}.2
dir=$(mktemp -d)
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "two_hosts_test: FAILED: $*"; exit 1; }

ip netns add "$a" && ip netns add "$b" || fail "cannot create network namespaces"
ip link add "v$tag-a" type veth peer name "v$tag-b" || fail "cannot create a veth pair"
ip link set "v$tag-a" netns "$a" && ip link set "v$tag-b" netns "$b" || fail "cannot move the veth ends"
ip -n "$a" addr add "$host_a/24" dev "v$tag-a" && ip -n "$b" addr add "$host_b/24" dev "v$tag-b" || fail "addresses"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "v$tag-a" up && ip -n "$b" link set "v$tag-b" up || fail "cannot bring the link up"

# Open MPI's rsh agent is called as "agent [ssh options] HOST COMMAND...".
cat >"$dir/agent.sh" <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in
  $host_a) ns=$a; name=onyx-host-a ;;
  $host_b) ns=$b; name=onyx-host-b ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns unshare --uts sh -c "hostname \$name; \$*"
AGENT
chmod +x "$dir/agent.sh"
printf "%s slots=1\n%s slots=1\n" "$host_a" "$host_b" >"$dir/hosts"
mpi=(--hostfile "$dir/hosts" -np 2 --mca plm_rsh_agent "$dir/agent.sh" --mca btl tcp,self
     --mca btl_tcp_if_include "$net/24" --mca oob_tcp_if_include "$net/24")
in_a() { timeout -s KILL 120 ip netns exec "$a" unshare --uts sh -c "hostname onyx-host-a; exec \"\$@\"" sh "$@"; }

in_a "$mpirun" "${mpi[@]}" sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"' >"$dir/where.log" 2>&1
cat "$dir/where.log"
grep -q "rank 1 on onyx-host-b" "$dir/where.log" || fail "rank 1 did not run in the second namespace"
"$check" loopback "$dir/reference.txt" >/dev/null || fail "the one-process run failed"
in_a "$mpirun" "${mpi[@]}" "$check" mpi "$dir/two_hosts.txt" --zero 1 || fail "the two-host run failed"
"$check" --compare "$dir/reference.txt" "$dir/two_hosts.txt" || fail "two hosts differ from one process"
echo "two_hosts_test: passed"
