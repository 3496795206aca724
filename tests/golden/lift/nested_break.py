def f(rows):
    total = 0
    for row in rows:
        for cell in row:
            if cell is None:
                break
            total += cell
        else:
            continue
        log(row)
    return total
