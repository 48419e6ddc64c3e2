#!/bin/sh
# pvbench as built with restriction off: the sweep's "unrestricted" setting,
# as a build for alternate.sh (copy to /tmp/alt/unres).
exec /tmp/alt/base -restrict=false "$@"
