package fault

import "net/http"

// HTTPStatus is the one table from codes to HTTP statuses. Every HTTP edge
// (the admin API, the auth middleware, the OAuth pages) answers with it.
func HTTPStatus(code Code) int {
	switch code {
	case Invalid:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case Forbidden:
		return http.StatusForbidden
	case Unauthorized:
		return http.StatusUnauthorized
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case RateLimited:
		return http.StatusTooManyRequests
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
