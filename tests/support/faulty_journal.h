// tests/support/faulty_journal.h — the journal seam for in-process tests of TurnSession and Daemon
// (docs/design.md §16): every call goes to a real journal unless the test made it refuse, as a
// full disk does (JournalErrc::storage). Calls are recorded in order.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "journal/journal.h"

namespace radial::test {

class FaultyJournal : public journal::Journal {
public:
    explicit FaultyJournal(std::unique_ptr<journal::Journal> inner) : inner_(std::move(inner)) {}

    // Makes `op` refuse (`on`) or pass again: "add_turn", "set_state:<state>" (e.g.
    // "set_state:started"), "append_record", "set_terminal". [thread-safe]
    void refuse(const std::string& op, bool on = true) {
        std::lock_guard lock(mutex_);
        if (on)
            refused_.insert(op);
        else
            refused_.erase(op);
    }
    // The writing calls so far, named as refuse() names them. [thread-safe]
    std::vector<std::string> calls() {
        std::lock_guard lock(mutex_);
        return calls_;
    }

    void add_turn(const journal::TurnEntry& e, journal::TurnState initial) override {
        gate("add_turn");
        inner_->add_turn(e, initial);
    }
    void redact_request(std::string_view id, std::string_view image,
                        std::string_view request_json) override {
        gate("redact_request");
        inner_->redact_request(id, image, request_json);
    }
    void set_state(std::string_view id, journal::TurnState s) override {
        gate("set_state:" + std::string(journal::to_string(s)));
        inner_->set_state(id, s);
    }
    void set_label(std::string_view id, std::string_view label) override {
        gate("set_label");
        inner_->set_label(id, label);
    }
    std::uint64_t append_record(std::string_view id, std::string_view type,
                                std::string_view payload) override {
        gate("append_record");
        return inner_->append_record(id, type, payload);
    }
    void set_terminal(std::string_view id, std::string_view status,
                      std::string_view json) override {
        gate("set_terminal");
        inner_->set_terminal(id, status, json);
    }
    std::optional<journal::TurnDetails> turn(std::string_view id) override {
        return inner_->turn(id);
    }
    std::vector<journal::TurnSummary> recent_turns(std::size_t n) override {
        return inner_->recent_turns(n);
    }
    std::vector<journal::TurnSummary> in_flight() override { return inner_->in_flight(); }
    std::vector<journal::TurnSummary> queued() override { return inner_->queued(); }
    // Not among calls(): retention is not part of a turn's own writes.
    std::uint64_t prune(std::uint64_t max_age_ms, std::uint64_t max_bytes,
                        const KeepFn& keep) override {
        return inner_->prune(max_age_ms, max_bytes, keep);
    }

private:
    void gate(const std::string& op) {
        std::lock_guard lock(mutex_);
        calls_.push_back(op);
        if (refused_.count(op))
            throw journal::JournalError(journal::JournalErrc::storage,
                                        op + " in 'test journal': database or disk is full");
    }

    std::unique_ptr<journal::Journal> inner_;
    std::mutex mutex_;
    std::set<std::string> refused_;
    std::vector<std::string> calls_;
};

} // namespace radial::test
