// tests/host/journal/journal_crash_child.cpp — the process the crash-safety tests SIGKILL.
//
//   journal_crash_child <journal path> <turn id> settle
//       adds the turn, sets it started, appends 3 records, prints "ready", then sleeps until
//       killed: the kill lands on a quiet journal.
//   journal_crash_child <journal path> <turn id> stream
//       adds the turn, sets it started, then appends records as fast as it can, printing each
//       returned sequence number: the kill lands in the middle of a write.
//
// Exit status 2 on a usage error, 3 if the journal refuses anything; it never exits on its own
// after its first line, so a test that sees it gone knows something failed.
#include <chrono>
#include <exception>
#include <iostream>
#include <string>
#include <thread>

#include "journal/journal_sqlite.h"

int main(int argc, char** argv) {
    using radial::journal::TurnState;
    if (argc != 4) {
        std::cerr << "usage: journal_crash_child <journal path> <turn id> settle|stream\n";
        return 2;
    }
    const std::string path = argv[1], turn_id = argv[2], mode = argv[3];
    if (mode != "settle" && mode != "stream") {
        std::cerr << "journal_crash_child: unknown mode '" << mode << "'\n";
        return 2;
    }
    try {
        auto journal = radial::journal::open_sqlite_journal(path);
        journal->add_turn({turn_id, "radial-turn-test-" + turn_id, "docker",
                           "radial/busybox:latest", "result", R"({"secrets":["MODEL_KEY"]})"},
                          TurnState::claimed);
        journal->set_state(turn_id, TurnState::started);
        if (mode == "settle") {
            for (int i = 1; i <= 3; ++i)
                journal->append_record(turn_id, "progress", "{\"n\":" + std::to_string(i) + "}");
            std::cout << "ready" << std::endl;
            for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
        }
        for (int i = 1;; ++i) {
            std::uint64_t seq =
                journal->append_record(turn_id, "progress", "{\"n\":" + std::to_string(i) + "}");
            std::cout << seq << std::endl;
        }
    } catch (const std::exception& e) {
        std::cerr << "journal_crash_child: " << e.what() << '\n';
        return 3;
    }
}
