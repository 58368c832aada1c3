"""Dynamic programming over sequences and amounts."""


def fibonacci(n):
    """The n-th Fibonacci number, with fibonacci(0) == 0."""
    previous, current = 0, 1
    for _ in range(n):
        previous, current = current, previous + current
    return previous


def lcs_length(first, second):
    """Length of a longest common subsequence of two sequences."""
    rows, cols = len(first), len(second)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        for j in range(1, cols + 1):
            if first[i - 1] == second[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    return table[rows][cols]


def edit_distance(first, second):
    """Levenshtein distance: insertions, deletions and substitutions, each costing one."""
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, start=1):
        current = [i]
        for j, b in enumerate(second, start=1):
            cost = 0 if a == b else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        previous = current
    return previous[-1]


def knapsack(weights, values, capacity):
    """Best total value of items (each used at most once) within ``capacity``."""
    best = [0] * (capacity + 1)
    for weight, value in zip(weights, values, strict=True):
        for room in range(capacity, weight - 1, -1):
            best[room] = max(best[room], best[room - weight] + value)
    return best[capacity]


def coin_ways(coins, amount):
    """Number of ways to make ``amount`` from unlimited coins of the given values."""
    ways = [1] + [0] * amount
    for coin in coins:
        for total in range(coin, amount + 1):
            ways[total] += ways[total - coin]
    return ways[amount]


def longest_increasing(items):
    """Length of a longest strictly increasing subsequence."""
    lengths = []
    for i, item in enumerate(items):
        best = 1
        for j in range(i):
            if not items[j] < item:
                best = max(best, lengths[j] + 1)
        lengths.append(best)
    return max(lengths, default=0)
