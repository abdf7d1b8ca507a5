/** An error in words (the API's message), with a retry button when one helps. */
import { errorMessage } from '../api/api-error';

export function ErrorNotice({ error, retry, title = 'Something went wrong' }: { error: unknown; retry?: () => void; title?: string }) {
  return (
    <div className="notice notice-error" role="alert">
      <strong>{title}</strong>
      <span>{errorMessage(error)}</span>
      {retry && (
        <button type="button" className="btn btn-small" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}
