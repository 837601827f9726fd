#!/usr/bin/env bash
# Prints the per-user directory where built tools are cached by version
# (${XDG_CACHE_HOME:-~/.cache}/valkey-fsm/bin). It lives outside the checkout so that a clean
# clone (CI's) re-uses what an earlier run built; every recipe keys its directory by version,
# and rebuilds what is absent, so the cache never hides an install step.
echo "${XDG_CACHE_HOME:-$HOME/.cache}/valkey-fsm/bin"
