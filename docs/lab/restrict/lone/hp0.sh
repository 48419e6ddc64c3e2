#!/bin/sh
# pvbench as built with halt-polling off, and with it the watch: the
# sweep's "haltpoll=0s" setting, as a build for alternate.sh (copy to
# /tmp/alt/hp0).
exec /tmp/alt/base -haltpoll 0 "$@"
