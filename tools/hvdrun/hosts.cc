// SPDX-License-Identifier: Apache-2.0
#include "hosts.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace hvdrun {
namespace {

bool parse_slots(const std::string &text, int *out) {
    if (text.empty() || text.size() > 6) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    *out = std::atoi(text.c_str());
    return *out >= 1;
}

// Splits "host:slots" / "[v6]:slots" / "host" (default_slots). A bare name with several ':'
// is an IPv6 address without slots.
bool parse_host_entry(const std::string &entry, int default_slots, HostSlots *out,
                      std::string *err) {
    std::string name = entry;
    size_t colon = std::string::npos;  // the ':' in front of the slot count, if any
    if (!entry.empty() && entry[0] == '[') {
        size_t close = entry.find(']');
        if (close == std::string::npos || (close + 1 < entry.size() && entry[close + 1] != ':')) {
            *err = "malformed host entry '" + entry + "' (expected [address]:slots)";
            return false;
        }
        name = entry.substr(1, close - 1);
        if (close + 1 < entry.size()) colon = close + 1;
    } else if (entry.find(':') == entry.rfind(':')) {
        colon = entry.find(':');
        name = entry.substr(0, colon);
    }
    out->name = name;
    out->slots = default_slots;
    if (name.empty()) {
        *err = "malformed host entry '" + entry + "' (empty host name)";
        return false;
    }
    if (name[0] == '-') {  // would reach ssh as an option
        *err = "malformed host entry '" + entry + "' (a host name cannot start with '-')";
        return false;
    }
    if (colon != std::string::npos && !parse_slots(entry.substr(colon + 1), &out->slots)) {
        *err = "invalid slot count in host entry '" + entry + "' (expected an integer >= 1)";
        return false;
    }
    return true;
}

bool append_unique(const HostSlots &host, std::vector<HostSlots> *out, std::string *err) {
    for (const HostSlots &seen : *out) {
        if (seen.name == host.name) {
            *err = "host '" + host.name + "' is listed twice";
            return false;
        }
    }
    out->push_back(host);
    return true;
}

// One hostfile line without its comment: "host", "host:N", "host slots=N".
bool parse_hostfile_line(const std::string &line, int line_no, int default_slots,
                         std::vector<HostSlots> *out, std::string *err) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) return true;  // blank line
    HostSlots host;
    std::string detail;
    bool ok = parse_host_entry(first, default_slots, &host, &detail);
    for (std::string word; ok && words >> word;) {
        if (word.compare(0, 6, "slots=") == 0) {
            ok = parse_slots(word.substr(6), &host.slots);
            if (!ok) detail = "invalid '" + word + "' (expected slots=N with N >= 1)";
        } else {
            ok = false;
            detail = "unexpected '" + word + "' (expected slots=N)";
        }
    }
    if (ok) ok = append_unique(host, out, &detail);
    if (!ok) *err = "line " + std::to_string(line_no) + ": " + detail;
    return ok;
}

}  // namespace

bool parse_host_list(const std::string &spec, std::vector<HostSlots> *out, std::string *err,
                     int default_slots) {
    out->clear();
    std::istringstream entries(spec);
    for (std::string entry; std::getline(entries, entry, ',');) {
        HostSlots host;
        if (!parse_host_entry(entry, default_slots, &host, err) || !append_unique(host, out, err))
            return false;
    }
    if (out->empty()) {
        *err = "empty host list";
        return false;
    }
    return true;
}

bool parse_hostfile_text(const std::string &text, std::vector<HostSlots> *out, std::string *err,
                         int default_slots) {
    out->clear();
    std::istringstream lines(text);
    int line_no = 0;
    for (std::string line; std::getline(lines, line);) {
        ++line_no;
        if (!parse_hostfile_line(line.substr(0, line.find('#')), line_no, default_slots, out, err))
            return false;
    }
    if (out->empty()) {
        *err = "no hosts listed";
        return false;
    }
    return true;
}

bool read_hostfile(const std::string &path, std::vector<HostSlots> *out, std::string *err,
                   int default_slots) {
    std::ifstream file(path);
    if (!file) {
        *err = "cannot read hostfile '" + path + "'";
        return false;
    }
    std::ostringstream text;
    text << file.rdbuf();
    if (parse_hostfile_text(text.str(), out, err, default_slots)) return true;
    *err = "hostfile '" + path + "': " + *err;
    return false;
}

bool place_ranks(const std::vector<HostSlots> &hosts, int np, std::vector<Placement> *out,
                 std::string *err) {
    out->clear();
    std::vector<int> per_host;    // ranks placed on each used host
    std::vector<size_t> host_of;  // index into per_host, per rank
    for (size_t h = 0; h < hosts.size() && static_cast<int>(out->size()) < np; ++h) {
        per_host.push_back(0);
        for (int s = 0; s < hosts[h].slots && static_cast<int>(out->size()) < np; ++s) {
            Placement p;
            p.rank = static_cast<int>(out->size());
            p.host = hosts[h].name;
            p.local_rank = per_host.back()++;
            out->push_back(p);
            host_of.push_back(per_host.size() - 1);
        }
    }
    if (static_cast<int>(out->size()) < np) {
        *err = "-np " + std::to_string(np) + " needs more slots than the hosts offer (" +
               std::to_string(out->size()) + ")";
        out->clear();
        return false;
    }
    // Hosts may have different slot counts, so the cross rank is the number of EARLIER hosts
    // that also hold this local rank, not the host's index.
    for (Placement &p : *out) {
        size_t own = host_of[static_cast<size_t>(p.rank)];
        p.local_size = per_host[own];
        p.cross_rank = 0;
        p.cross_size = 0;
        for (size_t h = 0; h < per_host.size(); ++h) {
            bool holds = per_host[h] > p.local_rank;
            p.cross_size += holds ? 1 : 0;
            p.cross_rank += (holds && h < own) ? 1 : 0;
        }
    }
    return true;
}

bool is_local_host(const std::string &name, const std::string &this_host) {
    if (name == "localhost" || name == "127.0.0.1" || name == "::1") return true;
    if (name == this_host) return true;
    std::string short_host = this_host.substr(0, this_host.find('.'));
    return name == short_host;
}

std::string this_host_name() {
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

}  // namespace hvdrun
