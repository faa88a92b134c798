# Mean and 95% confidence interval over seeds of a statistic that
# `dtsim report --aggregate` does not compute (a phase average of a series,
# iterations to a target), and Welch's interval of a difference, as
# `report --aggregate --compare` gives them (docs/usage.md).
# Input: "GROUP|VALUE" lines, one per seed (sqlite3's list mode); an empty
# VALUE is a seed that did not reach a target and is left out of the mean.
#   awk -f experiments/ci.awk [-v fmt=%.4f] [-v cmp='A,B;C,D'] FILE
# prints per group (in input order) its mean +-h over n seeds, h the
# half-width of the 95% interval (t quantile over n - 1 degrees of
# freedom); then for each pair A,B of cmp the difference B - A, its 95%
# Welch interval and a verdict (higher, lower, inconclusive, n < 2).
function tq(df,   lo, f) { # t(0.975, df), linear in 1/df between table entries
    if (df >= 30) return 1.95996 + (T[30] - 1.95996) * 30 / df
    if (df < 1) df = 1
    lo = int(df); f = df - lo
    if (f == 0) return T[lo]
    return T[lo] + (T[lo + 1] - T[lo]) * (1 / lo - 1 / df) / (1 / lo - 1 / (lo + 1))
}
BEGIN {
    FS = "|"; if (fmt == "") fmt = "%.4f"
    split("12.7062 4.3027 3.1824 2.7764 2.5706 2.4469 2.3646 2.3060 2.2622 2.2281 " \
          "2.2010 2.1788 2.1604 2.1448 2.1314 2.1199 2.1098 2.1009 2.0930 2.0860 " \
          "2.0796 2.0739 2.0687 2.0639 2.0595 2.0555 2.0518 2.0484 2.0452 2.0423", T, " ")
}
{
    g = $1
    if (!(g in all)) { order[++ng] = g; all[g] = 0 }
    all[g]++
    if ($2 == "") next
    n[g]++; s[g] += $2; ss[g] += $2 * $2
}
END {
    for (i = 1; i <= ng; i++) {
        g = order[i]
        if (n[g] == 0) { printf "%s  n=0/%d  -\n", g, all[g]; continue }
        m[g] = s[g] / n[g]
        v[g] = n[g] > 1 ? (ss[g] - n[g] * m[g] * m[g]) / (n[g] - 1) : 0
        if (v[g] < 0) v[g] = 0
        reach = n[g] < all[g] ? sprintf(" (reached %d/%d)", n[g], all[g]) : ""
        if (n[g] > 1)
            printf "%s  n=%d  " fmt " +-" fmt "%s\n", g, n[g], m[g], tq(n[g] - 1) * sqrt(v[g] / n[g]), reach
        else
            printf "%s  n=%d  " fmt "%s\n", g, n[g], m[g], reach
    }
    np = split(cmp, pairs, ";")
    for (i = 1; i <= np; i++) {
        split(pairs[i], ab, ",")
        a = ab[1]; b = ab[2]
        if (n[a] < 2 || n[b] < 2) { printf "%s - %s: n < 2\n", b, a; continue }
        d = m[b] - m[a]
        ea = v[a] / n[a]; eb = v[b] / n[b]; se = sqrt(ea + eb)
        df = se > 0 ? (ea + eb) ^ 2 / (ea * ea / (n[a] - 1) + eb * eb / (n[b] - 1)) : 1
        h = tq(df) * se
        verdict = d - h > 0 ? "higher" : (d + h < 0 ? "lower" : "inconclusive")
        printf "%s - %s: " fmt " [" fmt ", " fmt "] %s\n", b, a, d, d - h, d + h, verdict
    }
}
