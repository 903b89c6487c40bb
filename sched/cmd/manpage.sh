#!/bin/sh
# sched/cmd/manpage.sh: a man page (roff) from a program's own --help texts, so that the page and
# --help never differ. `make install` runs it for gangsched(1) and gangctl(1).
#
#   sh sched/cmd/manpage.sh NAME "ONE-LINE DESCRIPTION" VERSION "CMD ARGS" ["TITLE|CMD ARGS"...]
#
# The first command's output is the SYNOPSIS and DESCRIPTION section; each further one is a
# subsection titled TITLE. Text is kept as preformatted lines (.nf), with roff's special
# characters escaped.
set -e
name=$1 desc=$2 version=$3
shift 3
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
upper=$(printf '%s' "$name" | tr 'a-z' 'A-Z')
printf '.TH %s 1 "" "gangsched %s" "User Commands"\n' "$upper" "$version"
printf '.SH NAME\n%s \\- %s\n' "$name" "$desc"
printf '.SH DESCRIPTION\n.nf\n'
sh -c "$1" | esc
printf '.fi\n'
shift
[ $# -gt 0 ] && printf '.SH COMMANDS\n'
for spec in "$@"; do
    title=${spec%%|*}
    cmd=${spec#*|}
    printf '.SS %s\n.nf\n' "$title"
    sh -c "$cmd" | esc
    printf '.fi\n'
done
printf '.SH SEE ALSO\ngangsched(1), gangctl(1), kubectl(1); docs/cli.md in the source tree.\n'
