#!/bin/bash
# cpu.sh FILE: every second, the time and the busy share of all CPUs since the last line (from /proc/stat).
prev=($(head -1 /proc/stat))
while sleep 1; do
  cur=($(head -1 /proc/stat))
  idle=$(( (${cur[4]} + ${cur[5]}) - (${prev[4]} + ${prev[5]}) ))
  total=0; for i in 1 2 3 4 5 6 7 8; do total=$(( total + ${cur[$i]} - ${prev[$i]} )); done
  echo "$(date +%s.%N) $(( 100 * (total - idle) / (total > 0 ? total : 1) ))" >> "$1"
  prev=("${cur[@]}")
done
