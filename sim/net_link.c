/* Link state of the flow-level network (network.h): the down marks and
 * rates of the links between two vertices, a link's ends and the bytes it
 * carried. Taking a link down also loses the flows on it, which
 * sim_net_link_set_down does in network.c. */
#include "sim/network.h"

#include <math.h>

#include "sim/net_internal.h"

/* Sets the down state of every link between a and b; *changed: whether any
 * changed. Returns the number of edges found. */
int net_links_mark(sim_net *net, int a, int b, int down, int *changed)
{
    int found = 0;
    for (int l = 0; l < net->n_links; l += 2) {
        int t = net_link_tail(net, l), u = net_link_tail(net, l ^ 1);
        if (!((t == a && u == b) || (t == b && u == a)))
            continue;
        found++;
        if (net->links[l].down != down) {
            net->links[l].down = net->links[l ^ 1].down = down;
            net->n_down += down ? 2 : -2;
            *changed = 1;
        }
    }
    return found;
}

/* The first directed link from vertex a to vertex b, or -1. */
static int link_between(const sim_net *net, int a, int b)
{
    for (int l = 0; l < net->n_links; l++)
        if (net_link_tail(net, l) == a && net_link_tail(net, l ^ 1) == b)
            return l;
    return -1;
}

int sim_net_link_is_down(const sim_net *net, int a, int b)
{
    int l = net->ideal ? -1 : link_between(net, a, b);
    return l < 0 ? -1 : net->links[l].down;
}

int sim_net_link_set_rate(sim_net *net, int a, int b, double rate, sim_err *err)
{
    if (net->ideal)
        return sim_err_set(err, SIM_EUSAGE, "network: an ideal network has no links to change");
    if (!(rate > 0.0 && isfinite(rate)))
        return sim_err_set(err, SIM_EINPUT, "network: link rate must be a finite rate > 0, got %g",
                           rate);
    int found = 0;
    for (int l = 0; l < net->n_links; l++)
        if (net_link_tail(net, l) == a && net_link_tail(net, l ^ 1) == b) {
            net->links[l].bw = rate;
            net->links[l ^ 1].bw = rate;
            found = 1;
            if (net->sharing == SIM_SHARE_FAIR &&
                (net_share_link_changed(net, l) || net_share_link_changed(net, l ^ 1)))
                return sim_err_set(err, SIM_ENOMEM, "network: out of memory");
        }
    if (!found)
        return sim_err_set(err, SIM_EINPUT, "network: no link between vertices %d and %d", a, b);
    int changed = 0;
    if (net->n_down && net_links_mark(net, a, b, 0, &changed) && changed)
        net_route_invalidate(net);
    return 0;
}

double sim_net_link_rate(const sim_net *net, int a, int b)
{
    int l = net->ideal ? -1 : link_between(net, a, b);
    return l < 0 ? -1 : net->links[l].bw;
}

int sim_net_link_ends(const sim_net *net, int link, int *from, int *to)
{
    if (link < 0 || link >= net->n_links)
        return SIM_EUSAGE;
    *from = net_link_tail(net, link);
    *to = net_link_tail(net, link ^ 1);
    return 0;
}

double sim_net_bytes_link(const sim_net *net, int link)
{
    if (link < 0 || link >= net->n_links)
        return 0.0;
    return net->links[link].bytes;
}
