# Sourced by docker/ci.sh: apt-get that waits (bounded) for another apt or dpkg to finish.
#
#   apt_install PACKAGE...    install from the OS packages (an `apt-get update` first only when needed)
#
# A machine that is still installing something (unattended-upgrades, another session's apt-get) holds
# the dpkg lock (/var/lib/dpkg/lock-frontend) or the lists lock (/var/lib/apt/lists/lock).  apt-get
# then stops at once with "Could not get lock ..."; here it is tried again until APT_LOCK_WAIT seconds
# have passed (default 300), and apt-get's own DPkg::Lock::Timeout waits for the dpkg lock in the
# meantime.  Any other failure returns at once.  Output goes to $APT_LOG (default /dev/null); a wait
# is noted there and, once, on stderr.  Returns 0 on success, 1 on failure, 2 when the lock stayed held.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-300}
APT_LOCK_POLL=${APT_LOCK_POLL:-5}
APT_LOG=${APT_LOG:-/dev/null}
APT_LOCKED='Could not get lock|Unable to acquire the dpkg|Unable to lock directory|is another process using it'

apt_get() { # ARGS...: one apt-get call, retried while a lock is held (bounded by APT_LOCK_WAIT)
    command -v apt-get > /dev/null || return 1
    local deadline=$(( $(date +%s) + APT_LOCK_WAIT )) out rc said=""
    out=$(mktemp)
    while :; do
        local left=$(( deadline - $(date +%s) ))
        [ "$left" -gt 0 ] || left=0
        rc=0
        env DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$left" "$@" > "$out" 2>&1 || rc=$?
        cat "$out" >> "$APT_LOG"
        if [ "$rc" = 0 ]; then rm -f "$out"; return 0; fi
        if ! grep -qE "$APT_LOCKED" "$out"; then rm -f "$out"; return 1; fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "apt.sh: the apt/dpkg lock stayed held for ${APT_LOCK_WAIT}s: $(grep -m1 -E "$APT_LOCKED" "$out")" \
                | tee -a "$APT_LOG" >&2
            rm -f "$out"
            return 2
        fi
        if [ -z "$said" ]; then
            echo "apt.sh: another apt or dpkg holds the lock; waiting up to ${APT_LOCK_WAIT}s" | tee -a "$APT_LOG" >&2
            said=1
        fi
        sleep "$APT_LOCK_POLL"
    done
}

apt_install() { # PACKAGE...: quietly; an `apt-get update` first only when the install fails without it
    local rc=0
    apt_get install -y -q --no-install-recommends "$@" || rc=$?
    [ "$rc" != 0 ] || return 0
    [ "$rc" != 2 ] || return 2
    apt_get update -q || return $?
    apt_get install -y -q --no-install-recommends "$@"
}
