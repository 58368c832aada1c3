"""Text algorithms on Python strings."""


def is_palindrome(text):
    """Tell whether ``text`` reads the same backwards, ignoring case and non-letters."""
    letters = [c.lower() for c in text if c.isalnum()]
    left, right = 0, len(letters) - 1
    while left < right:
        if letters[left] != letters[right]:
            return False
        left += 1
        right -= 1
    return True


def run_length_encode(text):
    """Encode runs of equal characters as (character, count) pairs."""
    runs = []
    for char in text:
        if runs and runs[-1][0] == char:
            runs[-1] = (char, runs[-1][1] + 1)
        else:
            runs.append((char, 1))
    return runs


def run_length_decode(runs):
    """Inverse of run_length_encode."""
    return "".join(char * count for char, count in runs)


def prefix_function(pattern):
    """Knuth-Morris-Pratt failure table: longest proper border of each prefix."""
    table = [0] * len(pattern)
    k = 1
    for i in range(1, len(pattern)):
        while k > 0 and pattern[i] != pattern[k]:
            k = table[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        table[i] = k
    return table


def find_all(text, pattern):
    """Start indices of every occurrence of a non-empty ``pattern`` in ``text``."""
    table = prefix_function(pattern)
    found = []
    k = 0
    for i, char in enumerate(text):
        while k > 0 and char != pattern[k]:
            k = table[k - 1]
        if char == pattern[k]:
            k += 1
        if k == len(pattern):
            found.append(i - k + 1)
            k = table[k - 1]
    return found


def common_prefix(words):
    """Longest prefix shared by all words."""
    if not words:
        return ""
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
