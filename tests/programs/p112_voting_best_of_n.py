# Self-consistency voting and best-of-n selection: sample n answers, majority vote (with ties
# broken by first occurrence), weighted votes, scoring candidates with a judge and picking the best,
# and a tournament between candidates.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def sample(question, n):
    out = []
    for i in range(n):
        out.append(llm(f"count: {question} sample {i}"))
    return out


@poppy
def majority(answers):
    counts = {}
    order = []
    for a in answers:
        if a not in counts:
            counts[a] = 0
            order.append(a)
        counts[a] += 1
    best = order[0]
    for a in order:
        if counts[a] > counts[best]:
            best = a
    return best, counts[best]


@poppy
def self_consistency(question, n=5):
    winner, votes = majority(sample(question, n))
    log(f"{question}: {winner} with {votes}/{n}")
    return winner


@poppy
def yes_no_vote(claim, voters):
    yes = 0
    no = 0
    for v in voters:
        if llm(f"yesno: {v} judges {claim}") == "yes":
            yes += 1
        else:
            no += 1
    return "accepted" if yes > no else "rejected" if no > yes else "tie", yes, no


@poppy
def weighted_vote(claim, weights):
    score = 0.0
    for voter, w in weights.items():
        verdict = llm(f"yesno: {voter} on {claim}")
        score += w if verdict == "yes" else -w
    return round(score, 3), score > 0


@poppy
def judge(candidate, rubric):
    return int(llm(f"count: score {candidate} by {rubric}"))


@poppy
def best_of_n(task, n, rubric="clarity"):
    candidates = []
    for i in range(n):
        candidates.append(llm(f"draft {i} for {task}"))
    best, best_score = None, -1
    for c in candidates:
        s = judge(c, rubric)
        if s > best_score:
            best, best_score = c, s
    return best, best_score


@poppy
def multi_judge(candidate, rubrics):
    scores = {}
    for r in rubrics:
        scores[r] = judge(candidate, r)
    total = sum(scores.values())
    return total, min(scores, key=scores.get)


@poppy
def tournament(players):
    round_no = 0
    while len(players) > 1:
        round_no += 1
        winners = []
        for i in range(0, len(players) - 1, 2):
            a, b = players[i], players[i + 1]
            winners.append(a if judge(a, f"round {round_no}") >= judge(b, f"round {round_no}")
                           else b)
        if len(players) % 2 == 1:
            winners.append(players[-1])
        players = winners
    return players[0], round_no


@poppy
def rank_candidates(cands):
    scored = []
    for c in cands:
        scored.append((judge(c, "overall"), c))
    scored.sort(reverse=True)
    return [c for _, c in scored]


@poppy
def vote_until_margin(question, margin, max_samples):
    yes = no = 0
    i = 0
    while abs(yes - no) < margin and i < max_samples:
        if llm(f"yesno: {question} #{i}") == "yes":
            yes += 1
        else:
            no += 1
        i += 1
    return yes, no, i


print(sample("2+2", 3))
print(majority(["a", "b", "b", "a", "c"]))
print(self_consistency("capital of peru"))
print(yes_no_vote("earth is round", ["v1", "v2", "v3", "v4"]))
print(weighted_vote("tea > coffee", {"ann": 0.5, "ben": 1.25, "cid": 0.75}))
print(best_of_n("poem", 4))
print(multi_judge("essay", ["style", "facts", "length"]))
print(tournament(["p1", "p2", "p3", "p4", "p5"]))
print(rank_candidates(["x", "y", "z"]))
print(vote_until_margin("rain", 2, 6))
