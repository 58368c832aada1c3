"""Dense matrices as lists of rows."""


def identity(n):
    """The n-by-n identity matrix.

    >>> identity(2)
    [[1, 0], [0, 1]]
    >>> identity(1)
    [[1]]
    >>> identity(0)
    []
    """
    return [[1 if i == j else 0 for j in range(n)] for i in range(n)]


def transpose(matrix):
    """Rows become columns.

    >>> transpose([[1, 2, 3], [4, 5, 6]])
    [[1, 4], [2, 5], [3, 6]]
    >>> transpose([[1]])
    [[1]]
    >>> transpose([[1, 2]])
    [[1], [2]]
    """
    rows, cols = len(matrix), len(matrix[0])
    return [[matrix[i][j] for i in range(rows)] for j in range(cols)]


def multiply(a, b):
    """Matrix product of ``a`` (n by m) and ``b`` (m by p).

    >>> multiply([[1, 2], [3, 4]], [[5, 6], [7, 8]])
    [[19, 22], [43, 50]]
    >>> multiply([[1, 0, 2]], [[1], [2], [3]])
    [[7]]
    >>> multiply([[2]], [[3]])
    [[6]]
    """
    inner = len(b)
    result = []
    for row in a:
        out = []
        for j in range(len(b[0])):
            total = 0
            for k in range(inner):
                total += row[k] * b[k][j]
            out.append(total)
        result.append(out)
    return result


def trace(matrix):
    """Sum of the main diagonal of a square matrix.

    >>> trace([[1, 2], [3, 4]])
    5
    >>> trace([[7]])
    7
    >>> trace([[1, 0, 0], [0, 2, 0], [0, 0, 3]])
    6
    """
    total = 0
    for i in range(len(matrix)):
        total += matrix[i][i]
    return total


def power(matrix, exponent):
    """A square matrix raised to a non-negative integer power.

    >>> power([[1, 1], [1, 0]], 10)
    [[89, 55], [55, 34]]
    >>> power([[2, 0], [0, 3]], 0)
    [[1, 0], [0, 1]]
    >>> power([[2]], 5)
    [[32]]
    """
    result = identity(len(matrix))
    while exponent > 0:
        if exponent % 2 == 1:
            result = multiply(result, matrix)
        matrix = multiply(matrix, matrix)
        exponent //= 2
    return result


def determinant_2x2(matrix):
    """Determinant of a 2-by-2 matrix.

    >>> determinant_2x2([[1, 2], [3, 4]])
    -2
    >>> determinant_2x2([[2, 0], [0, 2]])
    4
    >>> determinant_2x2([[0, 1], [1, 0]])
    -1
    """
    return matrix[0][0] * matrix[1][1] - matrix[0][1] * matrix[1][0]
